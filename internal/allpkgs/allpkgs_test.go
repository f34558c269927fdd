package allpkgs_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redschema/redschema/internal/allpkgs"
)

const module = "github.com/redschema/redschema"

// root is the module root, two directories up.
var root = filepath.Join("..", "..")

// TestEveryRegisteringPackageListed fails when a package of the module
// registers key patterns (keys.Register in a non-test file) but allpkgs
// does not import it.
func TestEveryRegisteringPackageListed(t *testing.T) {
	imported := map[string]bool{}
	f, err := parser.ParseFile(token.NewFileSet(), "allpkgs.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		imported[p] = true
	}
	registering := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
		if strings.Contains(string(src), "keys.Register(") {
			registering[module+"/"+filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(registering) == 0 {
		t.Fatal("found no registering package: the walk is broken")
	}
	var missing []string
	for p := range registering {
		if !imported[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("allpkgs.go does not import %v", missing)
	}
}

// TestDocTablesCurrent fails when a package's doc.go key table differs from
// the registry's: run "go generate ./..." at the module root.
func TestDocTablesCurrent(t *testing.T) {
	for _, owner := range allpkgs.Owners() {
		src, err := os.ReadFile(filepath.Join(root, owner, "doc.go"))
		if err != nil {
			t.Errorf("%s: %v", owner, err)
			continue
		}
		want, err := allpkgs.Rewrite(string(src), owner)
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
	out, err := allpkgs.Rewrite(src, "lock")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "old table") || !strings.Contains(out, "//\tlock:{resource_type}:{{resource_id}}") || !strings.HasSuffix(out, "//\n// # Next\npackage lock\n") {
		t.Errorf("rewrite:\n%s", out)
	}
	again, _ := allpkgs.Rewrite(out, "lock")
	if again != out {
		t.Error("rewrite is not idempotent")
	}
	if _, err := allpkgs.Rewrite("package x\n", "lock"); err == nil {
		t.Error("no heading: want an error")
	}
}
