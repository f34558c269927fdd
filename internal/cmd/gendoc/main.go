// Command gendoc rewrites the generated parts of the package docs ("go
// generate ./..." at the module root runs it): the key table of every
// registering package's doc.go, from the registry, and the package list
// of the root doc.go, from each package's synopsis (sub-modules
// included). Run it from the module root.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/redschema/redschema/internal/docgen"
)

func main() {
	rootDoc()
	optionTables()
	for _, owner := range docgen.Owners() {
		path := filepath.Join(owner, "doc.go")
		src, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		out, err := docgen.Rewrite(string(src), owner)
		if err != nil {
			fail(err)
		}
		if out != string(src) {
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				fail(err)
			}
			fmt.Println("gendoc: rewrote", path)
		}
	}
}

// rootDoc rewrites the package list of the root doc.go.
func rootDoc() {
	pkgs, err := docgen.Packages(".")
	if err != nil {
		fail(err)
	}
	src, err := os.ReadFile("doc.go")
	if err != nil {
		fail(err)
	}
	out, err := docgen.RewriteRoot(string(src), pkgs)
	if err != nil {
		fail(err)
	}
	if out != string(src) {
		if err := os.WriteFile("doc.go", []byte(out), 0o644); err != nil {
			fail(err)
		}
		fmt.Println("gendoc: rewrote doc.go")
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gendoc:", err)
	os.Exit(1)
}

// optionTables rewrites the option table of every package's docs page.
func optionTables() {
	pages, err := docgen.OptionPages(".")
	if err != nil {
		fail(err)
	}
	for page, opts := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			fail(err)
		}
		if out := docgen.RewriteOptions(string(src), opts); out != string(src) {
			if err := os.WriteFile(page, []byte(out), 0o644); err != nil {
				fail(err)
			}
			fmt.Println("gendoc: rewrote", page)
		}
	}
}
