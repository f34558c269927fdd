package docgen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
)

// Surface returns the exported top-level names of the package in dir (its
// non-test .go files): every const, var, type and func, each name of a
// group counted, methods and fields not. It is what "go doc -short"
// lists, with its grouped declarations spelled out.
func Surface(dir string) ([]string, error) {
	fset := token.NewFileSet()
	files, err := parseDir(fset, dir, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					out = append(out, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							out = append(out, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								out = append(out, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// parseDir parses the non-test .go files of dir, with mode.
func parseDir(fset *token.FileSet, dir string, mode parser.Mode) ([]*ast.File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, mode)
		if err != nil {
			return nil, err
		}
		if f.Name.Name != "main" {
			out = append(out, f)
		}
	}
	return out, nil
}
