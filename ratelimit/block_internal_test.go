package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
)

// block.lua recognises its own request ID: a resend, whatever it asks,
// changes nothing; another request lengthens the block or keeps a longer
// one.
func TestBlockRecognisesItsRequestID(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	run := call.NewRunner(e.Client, 0)
	k := e.NS.Prefix + "ratelimit:block:{x}"
	set := func(ms int64, id string) int64 {
		t.Helper()
		rep, err := run.Run(ctx, blockOp, []string{k}, ms, id, e.NS.Prefix+"ratelimit:events", "x")
		require.NoError(t, err)
		n := rep.Int(0)
		require.NoError(t, rep.Err())
		return n
	}
	ttl := func() time.Duration {
		d, err := e.Client.PTTL(ctx, k).Result()
		require.NoError(t, err)
		return d
	}
	require.EqualValues(t, 1, set(60_000, "req-1"))
	require.EqualValues(t, 1, set(3_600_000, "req-1"), "the resend reports the first outcome")
	require.LessOrEqual(t, ttl(), time.Minute, "and changes nothing")
	require.EqualValues(t, 1, set(3_600_000, "req-2"), "a longer block")
	require.Greater(t, ttl(), 59*time.Minute)
	require.EqualValues(t, 0, set(60_000, "req-3"), "a shorter block is kept out")
	v, err := e.Client.Get(ctx, k).Result()
	require.NoError(t, err)
	require.Equal(t, "req-2", v)
	require.Len(t, requestID(), 22)
}
