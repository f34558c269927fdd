// Command gendoc rewrites the key table of every registering package's
// doc.go from the registry ("go generate ./..." at the module root runs
// it). Run it from the module root.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/redschema/redschema/internal/allpkgs"
)

func main() {
	for _, owner := range allpkgs.Owners() {
		path := filepath.Join(owner, "doc.go")
		src, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		out, err := allpkgs.Rewrite(string(src), owner)
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gendoc:", err)
	os.Exit(1)
}
