// Package calltest holds a package's scripts to the call layer's rule:
// a script file is the script.
package calltest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
)

// CheckScripts holds a package to "a script file is the script". Run from
// the package's tests (the working directory is the package's), it checks
// that:
//   - every operation declared on p is made of whole .lua files of the
//     package (its head, library and body are each one file's text), and
//     the source it sends is exactly those files with the prelude, in
//     order;
//   - every .lua file of the package compiles on the test's backend as a
//     script of its own after the prelude.
func CheckScripts(t *testing.T, p *call.Pkg) {
	t.Helper()
	paths, err := filepath.Glob("*.lua")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no .lua files in the package directory (%v)", err)
	}
	sort.Strings(paths)
	srcs := make([]string, len(paths))
	isFile := map[string]bool{}
	for i, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		srcs[i] = string(b)
		isFile[srcs[i]] = true
	}
	ops := p.Ops()
	if len(ops) == 0 {
		t.Fatalf("package %s declares no operation", p.Name)
	}
	for _, op := range ops {
		head, lib, body := op.Parts()
		for _, part := range []struct{ what, src string }{{"head", head}, {"library", lib}, {"body", body}} {
			if part.src == "" && part.what != "body" {
				continue
			}
			if !isFile[part.src] {
				t.Errorf("%s %q: its %s is not the text of one of the package's .lua files", p.Name, op.Name(), part.what)
			}
		}
		var want []string
		for _, s := range []string{head, call.Prelude(), lib, body} {
			if s != "" {
				want = append(want, s)
			}
		}
		if got := op.Script().Source(); got != strings.Join(want, "\n") {
			t.Errorf("%s %q: the source sent is not head + prelude + library + body", p.Name, op.Name())
		}
	}
	e := harness.New(t)
	for i, path := range paths {
		src := call.Prelude() + "\n" + srcs[i]
		if err := e.Client.ScriptLoad(e.Ctx(), src).Err(); err != nil {
			t.Errorf("%s/%s does not compile as a script after the prelude: %v", p.Name, path, err)
		}
	}
}
