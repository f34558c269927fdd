// Package docgen keeps the generated parts of the docs in step, run by
// "go generate ./..." at the module root: each package's key table (the
// "# Keys" section of its doc.go) from its Schema (DocTable, Rewrite),
// and the root doc.go's list of every package of the repository with
// their synopses (Packages, RewriteRoot). Its tests hold every package
// doc to DocBudget lines, and hold dashboard.Schemas to every package of
// the module that declares key patterns, each with all it declares.
package docgen

import (
	"fmt"
	"strings"

	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
)

// Library returns the registry of every package of the library that
// declares key patterns: the dashboard's default (dashboard.Schemas).
func Library() *keys.Registry {
	r, err := keys.Compose(dashboard.Schemas()...)
	if err != nil {
		panic(err) // two packages declare the same pattern: the tests catch it
	}
	return r
}

// Owners returns the package names that own patterns in Library, sorted.
func Owners() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range Library().Templates() {
		if o := t.Pattern().Owner; !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out
}

// keysHeading starts the generated section of a package doc.
const keysHeading = "// # Keys\n//\n"

// Rewrite returns the doc.go source src of package owner with its key
// table replaced by the registry's: the indented lines right after the
// "# Keys" heading and its blank comment line. It fails when src has no
// such heading.
func Rewrite(src, owner string) (string, error) {
	out, ok := replaceSection(src, keysHeading, []string{"//\t"}, DocTable(owner))
	if !ok {
		return "", fmt.Errorf("%s/doc.go has no %q heading", owner, strings.TrimSpace(keysHeading))
	}
	return out, nil
}

// DocTable returns owner's key table as doc comment lines.
func DocTable(owner string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(Library().DocTable(owner), "\n"), "\n") {
		b.WriteString("//\t")
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	return b.String()
}
