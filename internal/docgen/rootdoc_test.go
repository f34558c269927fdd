package docgen_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redschema/redschema/internal/docgen"
)

// packages returns the repository's packages, failing t when the walk
// does not find the ones it must (so that a broken walk cannot make the
// tests below pass by finding nothing) or finds one it must skip.
func packages(t *testing.T) []docgen.Package {
	t.Helper()
	pkgs, err := docgen.Packages(root)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]docgen.Package{}
	for _, p := range pkgs {
		found[p.Dir] = p
		for _, skip := range []string{"internal", "cmd", "examples", "bench"} {
			if p.Dir == skip || strings.HasPrefix(p.Dir, skip+"/") || strings.Contains(p.Dir, "/"+skip+"/") {
				t.Errorf("Packages lists %s, under %s/", p.Dir, skip)
			}
		}
	}
	for dir, sub := range map[string]bool{
		"": false, "keys": false, "codec": false, "connect": false, "connect/connecttest": false,
		"dashboard": false, "queue": false, "session": false,
		"metrics/prom": true, "sensor/mqtt": true, "aimemory/tiktoken": true, "queue/otelqueue": true,
	} {
		p, ok := found[dir]
		switch {
		case !ok:
			t.Errorf("Packages misses %q", dir)
		case p.SubModule != sub:
			t.Errorf("%q: SubModule = %v, want %v", dir, p.SubModule, sub)
		}
	}
	if p := found["dashboard/browsertest"]; !p.DocOnly || !p.SubModule {
		t.Errorf("dashboard/browsertest: %+v, want a module of tests only (DocOnly)", p)
	}
	if found["keys"].DocOnly {
		t.Error("keys is DocOnly")
	}
	return pkgs
}

// TestRootDocListsEveryPackage fails when the root doc.go misses a
// package of the repository (sub-modules included), or when its package
// list is stale: run "go generate ./..." at the module root.
func TestRootDocListsEveryPackage(t *testing.T) {
	pkgs := packages(t)
	b, err := os.ReadFile(filepath.Join(root, "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for _, p := range pkgs {
		if p.Dir == "" || p.DocOnly {
			continue
		}
		if !regexp.MustCompile(`(?m)^//   - ` + regexp.QuoteMeta(p.Dir) + `[ :]`).MatchString(src) {
			t.Errorf("the root doc.go does not list package %s: run go generate ./... at the module root", p.Dir)
		}
	}
	want, err := docgen.RewriteRoot(src, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	if want != src {
		t.Error("the root doc.go package list is stale: run go generate ./... at the module root")
	}
}

// TestDocBudget fails when a package's doc (its doc.go, or its package
// comment where it has no doc.go) is longer than docgen.DocBudget lines,
// in the root module or a sub-module; internal/, cmd/, examples/ and
// bench/ are not held to it. The long form of a package doc belongs in
// docs/<package>.md.
func TestDocBudget(t *testing.T) {
	for _, p := range packages(t) {
		switch {
		case p.DocFile == "":
			t.Errorf("package %s (%s) has no package doc", p.Name, p.Dir)
		case p.DocLines > docgen.DocBudget:
			t.Errorf("%s: %d lines, over the budget of %d: move the long form to docs/%s.md",
				p.DocFile, p.DocLines, docgen.DocBudget, p.Name)
		}
	}
}

// TestDocsIndexListsEveryPage fails when a file in docs/ is not linked
// from docs/README.md.
func TestDocsIndexListsEveryPage(t *testing.T) {
	index, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || e.Name() == "README.md" {
			continue
		}
		if !strings.Contains(string(index), "]("+e.Name()+")") {
			t.Errorf("docs/README.md does not link docs/%s", e.Name())
		}
	}
}

func TestRewriteRoot(t *testing.T) {
	pkgs := []docgen.Package{
		{Dir: "", Name: "lib", Doc: "Package lib is the root.\n"},
		{Dir: "a", Name: "a", Doc: "Package a does one thing. Then more.\n"},
		{Dir: "a/sub", Name: "sub", SubModule: true, Doc: "Package sub is a module of its own, with a synopsis long enough to be wrapped over two lines or more.\n"},
		{Dir: "b", Name: "bee", Doc: "Bee things.\n"},
		{Dir: "c", Name: "c", DocOnly: true, Doc: "Package c holds tests only.\n"},
	}
	src := "// Package lib x.\n//\n// # Packages\n//\n//   - old item\n//     continued\n// The CLI.\npackage lib\n"
	out, err := docgen.RewriteRoot(src, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	want := "// Package lib x.\n//\n// # Packages\n//\n" +
		"//   - a does one thing.\n" +
		"//   - a/sub (a module of its own) is a module of its own, with a synopsis\n" +
		"//     long enough to be wrapped over two lines or more.\n" +
		"//   - b: Bee things.\n" +
		"//\n// The CLI.\npackage lib\n"
	if out != want {
		t.Errorf("rewrite:\n%s\nwant:\n%s", out, want)
	}
	again, _ := docgen.RewriteRoot(out, pkgs)
	if again != out {
		t.Error("rewrite is not idempotent")
	}
	if _, err := docgen.RewriteRoot("package lib\n", pkgs); err == nil {
		t.Error("no heading: want an error")
	}
}

// TestPackageListNoMarkerAtLineStart: a wrapped line never starts with a
// word that a doc comment reads as a list marker.
func TestPackageListNoMarkerAtLineStart(t *testing.T) {
	// "x " and the filler fill the first line (69 bytes after "//   - ")
	// exactly, so the marker would start the second.
	for _, marker := range []string{"-", "*", "2)"} {
		doc := "Package x " + strings.Repeat("a", 67) + " " + marker + " tail.\n"
		list := docgen.PackageList([]docgen.Package{{Dir: "x", Name: "x", Doc: doc}})
		lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("%q: want two lines:\n%s", marker, list)
		}
		if f := strings.Fields(strings.TrimPrefix(lines[1], "//"))[0]; f == marker {
			t.Errorf("line starts with the list marker %q:\n%s", marker, list)
		}
	}
}
