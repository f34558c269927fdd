package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// version describes the build: the module version ("(devel)" for a build
// from a checkout, "v1.2.3" for go install ...@v1.2.3), the commit and
// its time when the toolchain recorded them, and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "redschema (no build information) " + runtime.Version()
	}
	v := bi.Main.Version
	if v == "" {
		v = "(unknown version)"
	}
	var rev, when, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	parts := []string{"redschema", v}
	if bi.Main.Path != "" {
		parts = append(parts, bi.Main.Path)
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		c := "(commit " + rev
		if when != "" {
			c += " of " + when
		}
		parts = append(parts, c+dirty+")")
	}
	return strings.Join(append(parts, bi.GoVersion, runtime.GOOS+"/"+runtime.GOARCH), " ")
}
