package call

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed prelude.lua
var preludeSrc string

// Prelude returns prelude.lua, the helpers every script is sent after.
func Prelude() string { return preludeSrc }

// A Helper is one of the shared helper files next to prelude.lua: Lua
// functions that some scripts of several packages call, sent only before
// the scripts whose operation names it (Helpers), because every function
// sent costs a script a closure on every run.
type Helper uint8

// The helper files. Each runs after the prelude and may call it.
const (
	// Batched is batched.lua: batched(cmd, key, list, i, j, extra) runs
	// a variadic command in chunks of at most 1000 arguments.
	Batched Helper = iota
	// ExpireAt is expire_at.lua: expire_at(key, at, now) sets a
	// deadline as a relative PEXPIRE, rounded up.
	ExpireAt
	// JSONStr is json_str.lua: json_str(s) quotes s as a JSON string.
	JSONStr
	// RFC3339 is rfc3339.lua: rfc3339(ms) formats Unix ms as the seeds
	// write timestamps.
	RFC3339
	// ScoreMS is score_ms.lua: score_ms(s, lo, hi) and score_digits(s)
	// read a sorted-set score back as an integer.
	ScoreMS
	// ToNum is to_num.lua: to_num(s) parses a strict finite number.
	ToNum
	nHelper
)

var (
	//go:embed batched.lua
	batchedSrc string
	//go:embed expire_at.lua
	expireAtSrc string
	//go:embed json_str.lua
	jsonStrSrc string
	//go:embed rfc3339.lua
	rfc3339Src string
	//go:embed score_ms.lua
	scoreMSSrc string
	//go:embed to_num.lua
	toNumSrc string
)

// helperFiles holds each Helper's file name and text.
var helperFiles = [nHelper]struct {
	name string
	src  *string
}{
	Batched:  {"batched.lua", &batchedSrc},
	ExpireAt: {"expire_at.lua", &expireAtSrc},
	JSONStr:  {"json_str.lua", &jsonStrSrc},
	RFC3339:  {"rfc3339.lua", &rfc3339Src},
	ScoreMS:  {"score_ms.lua", &scoreMSSrc},
	ToNum:    {"to_num.lua", &toNumSrc},
}

// Source returns the helper file's text ("" for no helper).
func (h Helper) Source() string {
	if h >= nHelper {
		return ""
	}
	return *helperFiles[h].src
}

// String returns the helper's file name.
func (h Helper) String() string {
	if h >= nHelper {
		return fmt.Sprintf("Helper(%d)", uint8(h))
	}
	return helperFiles[h].name
}

// AllHelpers returns every helper, in the order a script is sent them.
func AllHelpers() []Helper {
	hs := make([]Helper, nHelper)
	for i := range hs {
		hs[i] = Helper(i)
	}
	return hs
}

// source is the text sent to Redis for an operation: the parts that are
// not empty, each a whole .lua file, joined by newlines in the order
// head, prelude, helpers, library, body.
func source(head string, helpers []Helper, lib, body string) string {
	parts := []string{head, preludeSrc}
	for _, h := range helpers {
		parts = append(parts, h.Source())
	}
	parts = append(parts, lib, body)
	kept := parts[:0]
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n")
}
