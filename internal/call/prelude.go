package call

import (
	_ "embed"
	"regexp"
	"strings"
	"sync"
)

//go:embed prelude.lua
var preludeSrc string

// A Library is Lua source of top-level definitions that scripts share: the
// prelude, or a package's own library (lock's fence.lua, ...). A script
// gets only the paragraphs it uses, and the paragraphs those use, in the
// library's order: every "local function f" or "local x =" costs a
// closure or a value on every run of a script, used or not.
//
// Paragraphs are separated by blank lines. A paragraph defines the names
// of its top-level "local function name" and "local name" lines; it is
// used when the script calls one of its functions ("name(") or names one
// of its values. A paragraph that defines nothing (a header comment) is
// dropped.
type Library struct {
	paras []para
}

type para struct {
	text  string
	funcs []string // functions it defines
	vars  []string // values it defines
	uses  *regexp.Regexp
	deps  []int
}

var (
	defRE     = regexp.MustCompile(`(?m)^local (function )?([A-Za-z_][A-Za-z0-9_]*)`)
	commentRE = regexp.MustCompile(`--[^\n]*`)
)

// NewLibrary parses src.
func NewLibrary(src string) *Library {
	l := &Library{}
	for _, p := range strings.Split(src, "\n\n") {
		var x para
		for _, m := range defRE.FindAllStringSubmatch(p, -1) {
			if m[1] != "" {
				x.funcs = append(x.funcs, m[2])
			} else {
				x.vars = append(x.vars, m[2])
			}
		}
		if len(x.funcs)+len(x.vars) == 0 {
			continue
		}
		x.text = strings.TrimSpace(p)
		x.uses = usesRE(x.funcs, x.vars)
		l.paras = append(l.paras, x)
	}
	for i := range l.paras {
		code := stripDefs(stripComments(l.paras[i].text))
		for j := range l.paras {
			if i != j && l.paras[j].uses.MatchString(code) {
				l.paras[i].deps = append(l.paras[i].deps, j)
			}
		}
	}
	return l
}

// usesRE matches a call of one of funcs or a mention of one of vars.
func usesRE(funcs, vars []string) *regexp.Regexp {
	var alts []string
	for _, f := range funcs {
		alts = append(alts, `\b`+regexp.QuoteMeta(f)+`\s*\(`)
	}
	for _, v := range vars {
		alts = append(alts, `\b`+regexp.QuoteMeta(v)+`\b`)
	}
	return regexp.MustCompile(strings.Join(alts, "|"))
}

// stripDefs blanks the defining words of a paragraph's own names, so that
// a paragraph does not count as using itself.
func stripDefs(code string) string { return defRE.ReplaceAllString(code, "local") }

// stripComments drops Lua line comments (a "--" inside a string literal
// goes too; the worst that does is to leave out a helper, which the
// script's tests catch as a call of nil).
func stripComments(src string) string { return commentRE.ReplaceAllString(src, "") }

// For returns the paragraphs that code uses, and those they use, in the
// library's order, as the text to put before code.
func (l *Library) For(code string) string {
	code = stripComments(code)
	want := make([]bool, len(l.paras))
	var mark func(i int)
	mark = func(i int) {
		if want[i] {
			return
		}
		want[i] = true
		for _, d := range l.paras[i].deps {
			mark(d)
		}
	}
	for i, p := range l.paras {
		if p.uses.MatchString(code) {
			mark(i)
		}
	}
	var b strings.Builder
	for i, p := range l.paras {
		if want[i] {
			b.WriteString(p.text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Names returns the names the library defines, in order.
func (l *Library) Names() []string {
	var out []string
	for _, p := range l.paras {
		out = append(out, p.funcs...)
		out = append(out, p.vars...)
	}
	return out
}

var prelude = sync.OnceValue(func() *Library { return NewLibrary(preludeSrc) })

// Prelude returns the helpers of prelude.lua that body calls, and the
// helpers they call, in the prelude's order: the text to put before
// body. A body that names no helper gets "".
func Prelude(body string) string { return prelude().For(body) }

// Helpers returns the names the prelude defines, in order.
func Helpers() []string { return prelude().Names() }

// source assembles a script: the package libraries' paragraphs that body
// (or an earlier library paragraph) uses, then the prelude helpers all of
// that uses, then body.
func source(body string, libs []*Library) string {
	var parts []string
	code := body
	for i := len(libs) - 1; i >= 0; i-- {
		if t := libs[i].For(code); t != "" {
			parts = append([]string{t}, parts...)
			code = t + "\n" + code
		}
	}
	if t := Prelude(code); t != "" {
		parts = append([]string{t}, parts...)
	}
	return strings.Join(append(parts, body), "\n")
}
