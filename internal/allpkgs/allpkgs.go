// Package allpkgs imports, for their side effect of registering key
// patterns and channels in keys.Default, every package of the library that
// registers any: the one list of them, used by cmd/redschema, the schema
// tests and the doc generator. A test fails when a registering package is
// missing from it.
//
// It also keeps the generated parts of the package docs in step, run by
// "go generate ./..." at the module root: each package's key table (the
// "# Keys" section of its doc.go) with the registry (DocTable, Rewrite),
// and the root doc.go's list of every package of the repository with
// their synopses (Packages, RewriteRoot). Its tests hold every package
// doc to DocBudget lines.
package allpkgs

import (
	"fmt"
	"strings"

	"github.com/redschema/redschema/keys"

	// The registering packages, one per line.
	_ "github.com/redschema/redschema/aimemory"
	_ "github.com/redschema/redschema/cache"
	_ "github.com/redschema/redschema/chat"
	_ "github.com/redschema/redschema/lock"
	_ "github.com/redschema/redschema/metrics"
	_ "github.com/redschema/redschema/presence"
	_ "github.com/redschema/redschema/pubsub"
	_ "github.com/redschema/redschema/queue"
	_ "github.com/redschema/redschema/ratelimit"
	_ "github.com/redschema/redschema/sensor"
	_ "github.com/redschema/redschema/session"
)

// Owners returns the package names that own registered patterns, sorted.
func Owners() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range keys.Default().Templates() {
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
	i := strings.Index(src, keysHeading)
	if i < 0 {
		return "", fmt.Errorf("%s/doc.go has no %q heading", owner, strings.TrimSpace(keysHeading))
	}
	start := i + len(keysHeading)
	end := start
	for strings.HasPrefix(src[end:], "//\t") {
		nl := strings.IndexByte(src[end:], '\n')
		if nl < 0 {
			end = len(src)
			break
		}
		end += nl + 1
	}
	rest := src[end:]
	if strings.HasPrefix(rest, "// ") {
		rest = "//\n" + rest // a paragraph must not touch the table
	}
	return src[:start] + DocTable(owner) + rest, nil
}

// DocTable returns owner's key table as doc comment lines.
func DocTable(owner string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(keys.Default().DocTable(owner), "\n"), "\n") {
		b.WriteString("//\t")
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	return b.String()
}
