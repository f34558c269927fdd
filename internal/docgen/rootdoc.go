package docgen

import (
	"bufio"
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// DocBudget is the most lines a package's doc.go may have, its generated
// key table included: what the package is, one example, the guarantees
// and the key table. The long form goes to docs/<package>.md.
const DocBudget = 120

// A Package is one package of the repository: a directory with Go source
// outside internal/, cmd/, examples/, bench/ and testdata/, in the root
// module or a sub-module. The root package doc lists every one of them
// but itself and those with no code (DocOnly).
type Package struct {
	// Dir is the package's directory relative to the repository root,
	// with slashes ("connect/connecttest").
	Dir string
	// Name is the package name.
	Name string
	// Module is the path of the module the package belongs to.
	Module string
	// SubModule reports whether that module is not the root module.
	SubModule bool
	// Doc is the package doc comment's text, without comment markers.
	Doc string
	// DocFile is the file holding the package doc comment, relative to the
	// repository root ("" when the package has none).
	DocFile string
	// DocLines is the length of the package doc: the lines of doc.go when
	// the package has one, else the lines of its package doc comment.
	DocLines int
	// DocOnly reports that the package's only non-test file is doc.go: a
	// package of tests (dashboard/browsertest), which nothing imports.
	DocOnly bool
}

// Synopsis returns the first sentence of p's package doc.
func (p Package) Synopsis() string { return new(doc.Package).Synopsis(p.Doc) }

// skipDirs are the directories whose packages the root doc does not list:
// internal code, commands and example programs (package main), the
// benchmarks' module, test data.
var skipDirs = map[string]bool{"internal": true, "cmd": true, "examples": true, "bench": true, "testdata": true, "vendor": true}

// Packages returns the packages of the repository at root (the root
// module's directory), sorted by directory, the root package first.
func Packages(root string) ([]Package, error) {
	rootMod, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	var out []Package
	mods := map[string]string{".": rootMod} // directory -> module path
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || skipDirs[d.Name()]) {
			return filepath.SkipDir
		}
		mod := mods[filepath.Dir(rel)]
		if m, err := modulePath(filepath.Join(path, "go.mod")); err == nil {
			mod = m
		} else if !os.IsNotExist(err) {
			return err
		}
		mods[rel] = mod
		p, ok, err := readPackage(root, rel)
		if err != nil || !ok {
			return err
		}
		p.Module, p.SubModule = mod, mod != rootMod
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// readPackage reads the package in directory rel of root: ok is false
// when it holds no non-test Go file.
func readPackage(root, rel string) (p Package, ok bool, err error) {
	dir := filepath.Join(root, rel)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return p, false, err
	}
	p.Dir = filepath.ToSlash(rel)
	if p.Dir == "." {
		p.Dir = ""
	}
	fset := token.NewFileSet()
	p.DocOnly = true
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return p, false, err
		}
		ok = true
		p.Name = f.Name.Name
		p.DocOnly = p.DocOnly && name == "doc.go"
		if f.Doc == nil || (p.DocFile != "" && name != "doc.go") {
			continue
		}
		p.Doc = f.Doc.Text()
		p.DocFile = filepath.ToSlash(filepath.Join(rel, name))
		start, end := fset.Position(f.Doc.Pos()).Line, fset.Position(f.Doc.End()).Line
		p.DocLines = end - start + 1
	}
	if !ok || p.DocFile == "" {
		return p, ok, nil
	}
	if strings.HasSuffix(p.DocFile, "/doc.go") || p.DocFile == "doc.go" {
		n, err := countLines(filepath.Join(root, filepath.FromSlash(p.DocFile)))
		if err != nil {
			return p, false, err
		}
		p.DocLines = n
	}
	return p, true, nil
}

// modulePath returns the module path declared in the go.mod file at path.
func modulePath(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s declares no module", path)
}

// countLines returns the number of lines of the file at path.
func countLines(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n := strings.Count(string(b), "\n")
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n, nil
}

// packagesHeading starts the generated list of the root package doc.
const packagesHeading = "// # Packages\n//\n"

// RewriteRoot returns the root doc.go source src with its package list
// replaced by pkgs' (the root package itself left out): the list items
// right after the "# Packages" heading and its blank comment line. It
// fails when src has no such heading.
func RewriteRoot(src string, pkgs []Package) (string, error) {
	out, ok := replaceSection(src, packagesHeading, []string{"//   - ", "//     "}, PackageList(pkgs))
	if !ok {
		return "", fmt.Errorf("doc.go has no %q heading", strings.TrimSpace(packagesHeading))
	}
	return out, nil
}

// replaceSection returns src with the lines right after heading that
// start with one of prefixes replaced by body, and whether src has the
// heading. A paragraph right after the section gets a blank comment line
// before it, so that it does not touch the section.
func replaceSection(src, heading string, prefixes []string, body string) (string, bool) {
	i := strings.Index(src, heading)
	if i < 0 {
		return "", false
	}
	start := i + len(heading)
	end := start
	for slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(src[end:], p) }) {
		nl := strings.IndexByte(src[end:], '\n')
		if nl < 0 {
			end = len(src)
			break
		}
		end += nl + 1
	}
	rest := src[end:]
	if strings.HasPrefix(rest, "// ") {
		rest = "//\n" + rest
	}
	return src[:start] + body + rest, true
}

// PackageList returns the root doc's list of pkgs as doc comment lines:
// one item per package but the root one and those of tests (DocOnly),
// its directory followed by its synopsis ("keys is the one place ..."),
// a sub-module's marked so.
func PackageList(pkgs []Package) string {
	var b strings.Builder
	for _, p := range pkgs {
		if p.Dir == "" || p.DocOnly {
			continue
		}
		name := p.Dir
		if p.SubModule {
			name += " (a module of its own)"
		}
		syn := p.Synopsis()
		var text string
		if rest, ok := strings.CutPrefix(syn, "Package "+p.Name+" "); ok {
			text = name + " " + rest
		} else {
			text = name + ": " + syn
		}
		for i, line := range wrap(text, docWidth-len("//     ")) {
			if i == 0 {
				b.WriteString("//   - ")
			} else {
				b.WriteString("//     ")
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// docWidth is the width the generated comment lines are wrapped to.
const docWidth = 76

// wrap splits text into lines of at most width bytes, breaking at spaces
// (a longer word has a line of its own). It never starts a line with a
// word that a doc comment would read as a list marker ("-", "1.").
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width || listMarker(w):
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// listMarker reports whether a line starting with word w would start a
// list item in a doc comment: "-", "*", "+", "•", or a number followed by
// "." or ")".
func listMarker(w string) bool {
	switch w {
	case "-", "*", "+", "•":
		return true
	}
	n := 0
	for n < len(w) && w[n] >= '0' && w[n] <= '9' {
		n++
	}
	return n > 0 && n+1 == len(w) && (w[n] == '.' || w[n] == ')')
}
