package call

import (
	_ "embed"
	"strings"
)

//go:embed prelude.lua
var preludeSrc string

// Prelude returns prelude.lua, the helpers every script is sent after.
func Prelude() string { return preludeSrc }

// source is the text sent to Redis for an operation: the parts that are
// not empty, each a whole .lua file, joined by newlines in the order
// head, prelude, library, body.
func source(head, lib, body string) string {
	parts := make([]string, 0, 4)
	for _, p := range []string{head, preludeSrc, lib, body} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n")
}
