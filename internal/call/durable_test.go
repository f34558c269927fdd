package call_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// setOp writes ARGV[1] to KEYS[1] and returns {'ok', value}.
var setOp = pkg.Declare("set", `
redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
return {'ok', ARGV[1]}
`, []*keys.Template{strKey}, call.Durable(), call.Shared())

// The test servers have no replicas: a durable write is done, and
// reported as such with ErrNotDurable (one WAIT per call, in its round
// trip), in Run and in RunMany; a Runner without a Durability sends no
// WAIT.
func TestDurableWriteWithoutReplicas(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	r := call.NewRunner(e.Client, 2)
	d := call.Durability{Replicas: 1, Timeout: 20 * time.Millisecond}
	require.NoError(t, d.Check(pkg, "new", "WithDurability", e.Client))
	r.SetDurability(d)
	k, err := strKey.Key(e.NS, "d1")
	require.NoError(t, err)

	rep, err := r.Run(ctx, setOp, []string{k}, "v1")
	require.ErrorIs(t, err, call.ErrNotDurable)
	assert.Contains(t, err.Error(), `calltest: set "`+k+`": not durable`)
	assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged within 20ms")
	nd, rest := call.NotDurable(err)
	assert.Equal(t, err, nd)
	assert.NoError(t, rest)
	assert.Equal(t, "v1", rep.Str(0), "the reply comes with ErrNotDurable")
	require.NoError(t, rep.Err())
	got, err := e.Client.Get(ctx, k).Result()
	require.NoError(t, err)
	assert.Equal(t, "v1", got, "the write was done")

	var calls []call.Call
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} { // several slots
		k, err := strKey.Key(e.NS, id)
		require.NoError(t, err)
		calls = append(calls, call.Call{Op: setOp, Keys: []string{k}, Args: []any{id}})
	}
	reps, errs := r.RunMany(ctx, calls)
	for i, c := range calls {
		require.ErrorIs(t, errs[i], call.ErrNotDurable, "call %d", i)
		assert.Equal(t, c.Args[0], reps[i].Str(0))
		got, err := e.Client.Get(ctx, c.Keys[0]).Result()
		require.NoError(t, err)
		assert.Equal(t, c.Args[0], got)
	}

	plain := call.NewRunner(e.Client, 0)
	_, err = plain.Run(ctx, setOp, []string{k}, "v2")
	require.NoError(t, err, "no durability asked, no WAIT")
}

// A failure is not ErrNotDurable: NotDurable leaves it alone.
func TestNotDurableSplit(t *testing.T) {
	other := pkg.Fail("set", "k", nil, errors.New("boom"))
	nd, rest := call.NotDurable(other)
	assert.NoError(t, nd)
	assert.Equal(t, other, rest)
	nd, rest = call.NotDurable(nil)
	assert.NoError(t, nd)
	assert.NoError(t, rest)
}

func TestDurabilityCheck(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}, ContextTimeoutEnabled: true})
	defer ring.Close()
	for _, tc := range []struct {
		name string
		d    call.Durability
		rdb  redis.UniversalClient
		ok   bool
	}{
		{"zero is off", call.Durability{}, ring, true},
		{"one replica", call.Durability{Replicas: 1, Timeout: 50 * time.Millisecond}, c, true},
		{"no replicas", call.Durability{Replicas: 0, Timeout: time.Second}, c, false},
		{"too many", call.Durability{Replicas: call.MaxDurableReplicas + 1, Timeout: time.Second}, c, false},
		{"no timeout", call.Durability{Replicas: 1}, c, false},
		{"timeout past the read timeout", call.Durability{Replicas: 1, Timeout: c.Options().ReadTimeout}, c, false},
		{"ring", call.Durability{Replicas: 1, Timeout: time.Second}, ring, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Check(pkg, "new", "WithDurability", tc.rdb)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, errInvalid)
			assert.Contains(t, err.Error(), "WithDurability")
		})
	}
}
