package ratelimit

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/calltest"
	"github.com/redschema/redschema/internal/harness"
)

// TestScriptsAreFiles: every ratelimit script is its .lua file sent as
// written after the prelude, and every file compiles after the prelude.
// The check operations are declared by New, so a Limiter of each
// algorithm is built first; the lean one-rule script shares allow.lua's
// operation name, so its body is checked here.
func TestScriptsAreFiles(t *testing.T) {
	e := harness.New(t)
	for _, a := range []Algorithm{FixedWindow, Sliding, SlidingCounter, GCRA} {
		l, err := New(e.Client, Policy{{Algorithm: a, Limit: PerSecond(5)}}, WithNamespace(e.NS))
		require.NoError(t, err)
		require.NotNil(t, l.singleOp, "%v", a)
		head, lib, body := l.singleOp.Parts()
		require.Empty(t, head+lib, "%v", a)
		require.Equal(t, singleSrc[a], body, "%v: the lean script is its file", a)
		calltest.CheckOp(t, l.singleOp)
		require.NoError(t, l.Close())
	}
	calltest.CheckScripts(t, pkg)
}

// The algorithm names allow.lua and adjust.lua branch on are exactly the
// Go Algorithms' names, which New sends in ARGV: one list, in Go.
func TestScriptsBranchOnTheGoAlgorithmNames(t *testing.T) {
	var goNames []string
	for _, a := range []Algorithm{FixedWindow, Sliding, SlidingCounter, GCRA} {
		goNames = append(goNames, a.String())
	}
	slices.Sort(goNames)
	// a == 'fixed', S[o + 1] == 'gcra', a ~= 'fixed', else -- 'gcra'
	re := regexp.MustCompile(`(?:\ba|S\[o \+ 1\]) [=~]= '(\w+)'|else -- '(\w+)'`)
	for name, src := range map[string]string{"allow.lua": allowSrc, "adjust.lua": adjustSrc} {
		var got []string
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			got = append(got, m[1]+m[2])
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, goNames) {
			t.Errorf("%s branches on %v, Go names %v", name, got, goNames)
		}
	}
}

// Every limiter sends the same script text, whatever its policy and
// options: the policy travels in ARGV, so there is one SHA per script.
func TestScriptsAreTheSameForEveryPolicy(t *testing.T) {
	a, err := New(testClient(), Policy{{Algorithm: FixedWindow, Limit: PerMinute(5)}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(testClient(), Policy{
		{Algorithm: Sliding, Limit: PerSecond(3)},
		{Algorithm: GCRA, Limit: Limit{Rate: 10, Period: time.Hour, Burst: 2}},
	}, WithRuntimeConfig(), WithAutoBlock(3, time.Minute, time.Hour), WithWindowlessLogKey())
	if err != nil {
		t.Fatal(err)
	}
	if a.allowOp.Script().Hash() != b.allowOp.Script().Hash() || a.peekOp.Script().Hash() != b.peekOp.Script().Hash() ||
		a.adjustOp.Script().Hash() != b.adjustOp.Script().Hash() {
		t.Fatal("two policies send different scripts")
	}
	c, err := New(testClient(), Policy{{Algorithm: FixedWindow, Limit: PerHour(7)}}, WithoutBlocks())
	if err != nil {
		t.Fatal(err)
	}
	if a.singleOp == nil || c.singleOp == nil || a.singleOp.Script().Hash() != c.singleOp.Script().Hash() {
		t.Fatal("two one-rule policies send different lean scripts")
	}
	for _, src := range []string{allowSrc, adjustSrc, blockSrc, fixedSrc, slidingSrc, swcSrc, gcraSrc} {
		if strings.Contains(src, "--[[") || strings.Contains(src, "CHECK_BLOCK") {
			t.Fatalf("a script holds a marker or a prepended local:\n%s", src)
		}
	}
}

// testClient is a client New accepts; nothing is sent through it.
func testClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
}
