package sweep

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

var (
	errInvalid = errors.New("sweeptest: invalid argument")
	pkg        = &call.Pkg{Name: "sweeptest", ErrInvalid: errInvalid}

	reg    = &keys.Registry{}
	dueKey = reg.MustRegister(keys.Pattern{Template: "sweeptest:due:{slot}", Type: keys.List, TTL: time.Minute, Tag: "slot", Owner: "sweeptest"})

	// dueOp returns the members listed at KEYS[1], in order, or, for
	// ARGV[1] "bad", a payload that is no list.
	dueOp = pkg.Declare("due", `
if ARGV[1] == 'bad' then return {'ok', 'not a list'} end
return {'ok', redis.call('LRANGE', KEYS[1], 0, -1)}
`, []*keys.Template{dueKey})

	// countOp returns ARGV[1], a number or, for "bad", not one.
	countOp = pkg.Declare("count", `
if ARGV[1] == 'bad' then return {'ok', 'not a number'} end
return {'ok', tonumber(ARGV[1])}
`, []*keys.Template{dueKey})
)

// slotKey is dueKey in slot.
func slotKey(t *testing.T, e *harness.Env, slot int) string {
	t.Helper()
	k, err := dueKey.Key(e.NS, keys.SlotTag(slot))
	require.NoError(t, err)
	return k
}

// TestDueVisitsTheBatchInOrder checks that Due builds one call per slot
// of the batch, wrapping round the ring, and passes each slot's members,
// in slot order, to each.
func TestDueVisitsTheBatchInOrder(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	run := call.NewRunner(e.Client, 0)
	n := keys.SlotCount
	for slot, members := range map[int][]string{n - 1: {"a", "b"}, 1: {"c"}, 2: {"outside"}} {
		require.NoError(t, e.Client.RPush(ctx, slotKey(t, e, slot), members).Err())
	}
	var built []int
	var got []string
	err := Due(ctx, run, n, n-1, 3,
		func(slot int) (call.Call, error) {
			built = append(built, slot)
			return call.Call{Op: dueOp, Keys: []string{slotKey(t, e, slot)}, Args: []any{"list"}}, nil
		},
		Members,
		func(m string) error { got = append(got, m); return nil })
	require.NoError(t, err)
	assert.Equal(t, []int{n - 1, 0, 1}, built)
	assert.Equal(t, []string{"a", "b", "c"}, got)
}

// TestDueKeepsTheFirstError checks that a failed call, a reply that does
// not decode and a failing each do not stop the other slots and values,
// and that the first of them, in slot order, is returned; a build error
// stops Due before anything runs.
func TestDueKeepsTheFirstError(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	run := call.NewRunner(e.Client, 0)
	n := keys.SlotCount
	// Slot 0 holds a string (the script fails), slot 1 replies no list,
	// slot 2 lists x and y (each fails on x), slot 3 lists z.
	require.NoError(t, e.Client.Set(ctx, slotKey(t, e, 0), "s", time.Minute).Err())
	require.NoError(t, e.Client.RPush(ctx, slotKey(t, e, 2), "x", "y").Err())
	require.NoError(t, e.Client.RPush(ctx, slotKey(t, e, 3), "z").Err())
	errX := errors.New("x refused")
	build := func(slot int) (call.Call, error) {
		arg := "list"
		if slot == 1 {
			arg = "bad"
		}
		return call.Call{Op: dueOp, Keys: []string{slotKey(t, e, slot)}, Args: []any{arg}}, nil
	}
	due := func(first, count int) ([]string, error) {
		var got []string
		err := Due(ctx, run, n, first, count, build, Members, func(m string) error {
			got = append(got, m)
			if m == "x" {
				return errX
			}
			return nil
		})
		return got, err
	}

	got, err := due(0, 4)
	assert.ErrorIs(t, err, keys.ErrCorrupt, "slot 0's error comes first")
	assert.Equal(t, []string{"x", "y", "z"}, got, "the other slots are visited")

	got, err = due(1, 3)
	require.Error(t, err)
	assert.NotErrorIs(t, err, errX, "slot 1's error comes first")
	assert.True(t, strings.Contains(err.Error(), "sweeptest"), "a reply error names the package: %v", err)
	assert.Equal(t, []string{"x", "y", "z"}, got)

	got, err = due(2, 2)
	assert.ErrorIs(t, err, errX)
	assert.Equal(t, []string{"x", "y", "z"}, got, "each goes on after an error")

	errBuild := errors.New("no key")
	var visited int
	err = Due(ctx, run, n, 2, 2,
		func(slot int) (call.Call, error) {
			if slot == 3 {
				return call.Call{}, errBuild
			}
			return build(slot)
		},
		Members, func(string) error { visited++; return nil })
	assert.ErrorIs(t, err, errBuild)
	assert.Zero(t, visited, "nothing runs after a build error")
}

// TestDueDecodesCounts checks Due with Int, as a sweep whose due script
// announces by itself and returns how many.
func TestDueDecodesCounts(t *testing.T) {
	e := harness.New(t)
	run := call.NewRunner(e.Client, 0)
	args := []string{"2", "bad", "3"}
	total := 0
	err := Due(e.Ctx(), run, len(args), 0, len(args),
		func(slot int) (call.Call, error) {
			return call.Call{Op: countOp, Keys: []string{slotKey(t, e, slot)}, Args: []any{args[slot]}}, nil
		},
		Int, func(m int64) error { total += int(m); return nil })
	assert.Error(t, err)
	assert.Equal(t, 5, total)
}

// TestCount checks that Count adds up what the calls that succeeded
// returned, keeps the first error, and runs nothing for no calls.
func TestCount(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	run := call.NewRunner(e.Client, 0)
	var calls []call.Call
	for i, a := range []string{"4", "bad", "1"} {
		calls = append(calls, call.Call{Op: countOp, Keys: []string{slotKey(t, e, i)}, Args: []any{a}})
	}
	n, err := Count(ctx, run, calls)
	assert.Error(t, err)
	assert.Equal(t, 5, n)

	n, err = Count(ctx, run, nil)
	assert.NoError(t, err)
	assert.Zero(t, n)
}

// TestLoad checks that Load loads once: a set flag skips it, and a failed
// load leaves the flag unset.
func TestLoad(t *testing.T) {
	e := harness.New(t)
	run := call.NewRunner(e.Client, 0)
	cancelled, cancel := context.WithCancel(e.Ctx())
	cancel()
	var loaded atomic.Bool
	assert.Error(t, Load(cancelled, run, &loaded, dueOp, countOp))
	assert.False(t, loaded.Load())
	require.NoError(t, Load(e.Ctx(), run, &loaded, dueOp, countOp))
	assert.True(t, loaded.Load())
	assert.NoError(t, Load(cancelled, run, &loaded, dueOp, countOp), "a loaded flag skips the load")
}

// TestRun checks RunSweeper's contract: every and batch that cannot
// sweep the ring within window are the package's invalid input, and the
// loop ends with its context's error, as the package's error.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	never := func(context.Context, int, int) (int, error) { return 0, nil }
	err := Run(ctx, pkg, "sweeper", 16, time.Second, 1, 3*time.Second, never, nil)
	assert.ErrorIs(t, err, errInvalid)
	assert.Contains(t, err.Error(), "sweeptest")

	var sweeps int
	err = Run(ctx, pkg, "sweeper", 16, time.Millisecond, 4, time.Minute,
		func(context.Context, int, int) (int, error) { sweeps++; cancel(); return 0, nil }, nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "sweeptest")
	assert.Equal(t, 1, sweeps)
}
