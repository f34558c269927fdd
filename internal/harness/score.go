package harness

import (
	"context"
	"strings"
)

// RoundMs is 1e8 ms. A Unix time in ms that is a multiple of it is a
// sorted-set score miniredis prints in exponent form ("1.7955e+12" for
// 1795500000000) where real Redis prints every digit: scripts that parse
// scores as times must read both as the same time.
const RoundMs = int64(100_000_000)

// RoundBefore returns the last multiple of RoundMs at or before ms (at
// most 28 hours before it).
func RoundBefore(ms int64) int64 { return ms / RoundMs * RoundMs }

// RequireExponentScore makes sure, on miniredis, that a round-score test
// tests what it says: it runs lua, a script that returns one score as a
// script reads it, and fails the test unless the score is in exponent
// form. On a real backend it does nothing.
func (e *Env) RequireExponentScore(lua string, keys []string, args ...any) {
	e.T.Helper()
	if e.Mini == nil {
		return
	}
	raw, err := e.Client.Eval(context.Background(), lua, keys, args...).Text()
	if err != nil {
		e.T.Fatalf("harness: reading the score: %v", err)
	}
	if !strings.Contains(raw, "e+") {
		e.T.Fatalf("harness: a script reads the score as %q, not in exponent form: the case under test is not made", raw)
	}
}
