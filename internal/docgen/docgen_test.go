package docgen_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redschema/redschema/internal/docgen"
)

const module = "github.com/redschema/redschema"

// root is the module root, two directories up.
var root = filepath.Join("..", "..")

// TestEveryRegisteringPackageListed fails when a package of the module
// declares key patterns (keys.MustCompile in a non-test file) but
// dashboard.Schemas leaves it out, or its Schema leaves out one it
// declares.
func TestEveryRegisteringPackageListed(t *testing.T) {
	registering := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case strings.HasPrefix(d.Name(), "."), rel == "keys", rel == "internal", rel == "examples", rel == "cmd":
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (bench, sub-modules)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(src), "keys.MustCompile("); n > 0 {
			registering[module+"/"+filepath.ToSlash(filepath.Dir(rel))] += n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(registering) == 0 {
		t.Fatal("found no registering package: the walk is broken")
	}
	lib := docgen.Library()
	for p, n := range registering {
		if got := len(lib.Owned(filepath.Base(p))); got != n {
			t.Errorf("%s declares %d patterns; dashboard.Schemas has %d of them (is its Schema listed, and does it list them all?)", p, n, got)
		}
	}
}

// TestDocTablesCurrent fails when a package's doc.go key table differs from
// the registry's: run "go generate ./..." at the module root.
func TestDocTablesCurrent(t *testing.T) {
	for _, owner := range docgen.Owners() {
		src, err := os.ReadFile(filepath.Join(root, owner, "doc.go"))
		if err != nil {
			t.Errorf("%s: %v", owner, err)
			continue
		}
		want, err := docgen.Rewrite(string(src), owner)
		if err != nil {
			t.Error(err)
			continue
		}
		if want != string(src) {
			t.Errorf("%s/doc.go key table is stale: run go generate ./... at the module root", owner)
		}
	}
}

func TestRewrite(t *testing.T) {
	src := "// Package lock x.\n//\n// # Keys\n//\n//\told table\n//\tmore\n//\n// # Next\npackage lock\n"
	out, err := docgen.Rewrite(src, "lock")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "old table") || !strings.Contains(out, "//\tlock:{resource_type}:{{resource_id}}") || !strings.HasSuffix(out, "//\n// # Next\npackage lock\n") {
		t.Errorf("rewrite:\n%s", out)
	}
	again, _ := docgen.Rewrite(out, "lock")
	if again != out {
		t.Error("rewrite is not idempotent")
	}
	if _, err := docgen.Rewrite("package x\n", "lock"); err == nil {
		t.Error("no heading: want an error")
	}
}

// TestNoInitInLibraryPackages fails when a package of the module other
// than a program (package main) has an init function: packages export
// their schema (Schema) and programs compose it, with no side effect of
// an import.
func TestNoInitInLibraryPackages(t *testing.T) {
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		seen++
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
				t.Errorf("%s: func init in package %s", path, f.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("walked %d library files: the walk is broken", seen)
	}
}

// TestNoPipelinerInPublicSignatures fails when an exported function or
// method of a public package takes or returns a go-redis pipeline: the
// packages' admin reads batch on their own (their Inspectors).
func TestNoPipelinerInPublicSignatures(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "internal") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() {
				continue
			}
			var sig strings.Builder
			for _, l := range []*ast.FieldList{fn.Type.Params, fn.Type.Results} {
				if l == nil {
					continue
				}
				for _, fld := range l.List {
					sig.WriteString(types.ExprString(fld.Type) + " ")
				}
			}
			if strings.Contains(sig.String(), "Pipeliner") {
				t.Errorf("%s: %s takes or returns a pipeline: %s", path, fn.Name.Name, sig.String())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
