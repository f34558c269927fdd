// Package calltest holds a package's scripts to the call layer's rule:
// a script file is the script.
package calltest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
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
//   - every operation names exactly the shared helpers (call.Needs) that
//     its head, library and body call;
//   - every operation's body (and head) opens with a header that names
//     each KEYS[i] and ARGV[i] its code reads (a range "ARGV[1..5]" names
//     five, "ARGV[4..]" every one from 4) and says what it returns;
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
		CheckOp(t, op)
	}
	e := harness.New(t)
	for i, path := range paths {
		src := call.Prelude() + "\n" + srcs[i]
		if err := e.Client.ScriptLoad(e.Ctx(), src).Err(); err != nil {
			t.Errorf("%s/%s does not compile as a script after the prelude: %v", p.Name, path, err)
		}
	}
}

// CheckOp holds one operation to the rules CheckScripts checks for each
// (its source, its helpers, its headers), for an operation CheckScripts
// does not see: one declared in a constructor under a name the package
// already declared.
func CheckOp(t *testing.T, op *call.Op) {
	t.Helper()
	head, lib, body := op.Parts()
	parts := []string{head, call.Prelude()}
	for _, h := range op.Needs() {
		parts = append(parts, h.Source())
	}
	var want []string
	for _, s := range append(parts, lib, body) {
		if s != "" {
			want = append(want, s)
		}
	}
	if got := op.Script().Source(); got != strings.Join(want, "\n") {
		t.Errorf("%q: the source sent is not head + prelude + helpers + library + body", op.Name())
	}
	for _, miss := range helperMisses(op.Needs(), head+"\n"+lib+"\n"+body) {
		t.Errorf("%q: %s", op.Name(), miss)
	}
	for _, src := range []string{head, body} {
		for _, miss := range headerMisses(src) {
			t.Errorf("%q: a header does not %s", op.Name(), miss)
		}
	}
}

var (
	defRe     = regexp.MustCompile(`(?m)^local function (\w+)\(`)
	commentRe = regexp.MustCompile(`--[^\n]*`)
)

// helperMisses returns how needs differs from the helpers that code (a
// script's head, library and body) calls: a helper called but not
// named, or named but not called.
func helperMisses(needs []call.Helper, code string) []string {
	code = commentRe.ReplaceAllString(code, "")
	var out []string
	for _, h := range call.AllHelpers() {
		called := ""
		for _, m := range defRe.FindAllStringSubmatch(h.Source(), -1) {
			if regexp.MustCompile(`(^|[^\w.:])` + m[1] + `\(`).MatchString(code) {
				called = m[1]
				break
			}
		}
		named := slices.Contains(needs, h)
		switch {
		case called != "" && !named:
			out = append(out, fmt.Sprintf("calls %s from %s, which it does not name with call.Needs", called, h))
		case called == "" && named:
			out = append(out, fmt.Sprintf("names %s with call.Needs but calls none of its functions", h))
		}
	}
	return out
}

var (
	indexRe  = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)
	rangeRe  = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\.\.(\d*)\]`)
	returnRe = regexp.MustCompile(`(?i)\breturn|\breply|\breplies`)
)

// headerMisses returns what the header of script src (its opening
// comment lines) leaves out: a KEYS[i] or ARGV[i] its code reads, or what
// it returns.
func headerMisses(src string) []string {
	if src == "" {
		return nil
	}
	var head, code []string
	inHead := true
	for _, l := range strings.Split(src, "\n") {
		if inHead && strings.HasPrefix(strings.TrimSpace(l), "--") {
			head = append(head, l)
			continue
		}
		inHead = false
		code = append(code, l)
	}
	h := strings.Join(head, "\n")
	named := map[string]bool{}
	for _, m := range indexRe.FindAllStringSubmatch(h, -1) {
		named[m[1]+"["+m[2]+"]"] = true
	}
	for _, m := range rangeRe.FindAllStringSubmatch(h, -1) {
		a, _ := strconv.Atoi(m[2])
		b, err := strconv.Atoi(m[3])
		if err != nil { // "ARGV[4..]": every index from 4 on
			b = a + 99
		}
		for i := a; i <= b && i-a < 100; i++ {
			named[m[1]+"["+strconv.Itoa(i)+"]"] = true
		}
	}
	var miss []string
	seen := map[string]bool{}
	for _, m := range indexRe.FindAllString(strings.Join(code, "\n"), -1) {
		if !named[m] && !seen[m] {
			seen[m] = true
			miss = append(miss, "name "+m)
		}
	}
	if !returnRe.MatchString(h) {
		miss = append(miss, "say what it returns")
	}
	return miss
}
