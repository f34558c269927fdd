package ratelimit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/ratelimit"
)

// futureScore is a sliding-log score far ahead of any server time (Unix
// ms, the year 33658): no check writes it.
const futureScore = 1e15

// failsWritingNothing runs call and requires keys.ErrCorrupt naming key k
// (without the namespace), with every key of the namespace left as it
// was.
func failsWritingNothing(t *testing.T, e *harness.Env, k string, call func() error) {
	t.Helper()
	before := e.Snapshot()
	err := call()
	require.ErrorIs(t, err, keys.ErrCorrupt, "%v", err)
	var ce *keys.CorruptError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, e.NS.Prefix+k, ce.Key, "names the key: %v", err)
	require.Equal(t, before, e.Snapshot(), "nothing written")
}

// TestPenalizeCorruptLogWritesNothing: policy [FixedWindow, Sliding], the
// counter at 3 and the log's key a string. Penalize reads and checks every
// rule's key before it writes its resend marker or any rule: it fails
// naming the log, the counter is still 3 and no marker is left (which
// would make a resend within the minute succeed doing nothing).
func TestPenalizeCorruptLogWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, ratelimit.Policy{
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(5)},
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(5)},
	})
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"ratelimit:api:{c}:minute", "3", time.Minute).Err())
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"sliding_limit:{c}:minute", "x", time.Minute).Err())
	failsWritingNothing(t, e, "sliding_limit:{c}:minute", func() error { return l.Penalize(ctx, "c", 2) })
}

// TestRefundCorruptGCRAWritesNothing: policy [FixedWindow, GCRA], the
// counter at 3 and the GCRA key holding garbage. Refund fails naming the
// GCRA key, and the counter is still 3 (not 1).
func TestRefundCorruptGCRAWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, ratelimit.Policy{
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(5)},
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerMinute(5)},
	})
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"ratelimit:api:{c}:minute", "3", time.Minute).Err())
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"ratelimit:gcra:{c}:minute", "soon", time.Minute).Err())
	failsWritingNothing(t, e, "ratelimit:gcra:{c}:minute", func() error { return l.Refund(ctx, "c", 2) })
}

// TestSlidingFutureEntryWritesNothing: the lean Sliding script (rate 1)
// on a log of an entry that has left the window and one scored in the
// future. The check finds the log full, reports the future entry, and
// has not trimmed the old one first.
func TestSlidingFutureEntryWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerMinute(1)))
	k := "sliding_limit:{c}:minute"
	require.NoError(t, e.Client.ZAdd(ctx, e.NS.Prefix+k,
		redis.Z{Score: float64(e.Now().Add(-2 * time.Minute).UnixMilli()), Member: "old"},
		redis.Z{Score: futureScore, Member: "future"}).Err())
	require.NoError(t, e.Client.Expire(ctx, e.NS.Prefix+k, time.Minute).Err())
	failsWritingNothing(t, e, k, func() error { _, err := l.Allow(ctx, "c"); return err })
}

// TestAutoBlockFutureEntryWritesNothing: WithAutoBlock and a Sliding rule
// of rate 2 whose log holds a recent entry and one scored in the future.
// The refused check reports the future entry before it counts the
// refusal: no ratelimit:refusals:{c} is written.
func TestAutoBlockFutureEntryWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerMinute(2)), ratelimit.WithAutoBlock(3, time.Minute, time.Minute))
	k := "sliding_limit:{c}:minute"
	require.NoError(t, e.Client.ZAdd(ctx, e.NS.Prefix+k,
		redis.Z{Score: float64(e.Now().Add(-time.Second).UnixMilli()), Member: "recent"},
		redis.Z{Score: futureScore, Member: "future"}).Err())
	require.NoError(t, e.Client.Expire(ctx, e.NS.Prefix+k, time.Minute).Err())
	failsWritingNothing(t, e, k, func() error { _, err := l.Allow(ctx, "c"); return err })
}

// TestAutoBlockCorruptRefusalsWritesNothing: WithAutoBlock and a
// FixedWindow counter at its limit without a TTL, the refusal count a
// hash. The refused check reports the refusal count before it repairs the
// counter's TTL: the counter keeps no TTL.
func TestAutoBlockCorruptRefusalsWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(1)), ratelimit.WithAutoBlock(3, time.Minute, time.Minute))
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"ratelimit:api:{c}:minute", "1", 0).Err())
	require.NoError(t, e.Client.HSet(ctx, e.NS.Prefix+"ratelimit:refusals:{c}", "a", "b").Err())
	failsWritingNothing(t, e, "ratelimit:refusals:{c}", func() error { _, err := l.Allow(ctx, "c"); return err })
}

// A first write the server refuses (OOM past maxmemory) is the server's
// error, returned as such: never keys.ErrCorrupt naming a sound counter
// (the lean FixedWindow script's INCRBY), nor a sound refusal count
// (WithAutoBlock's INCR of a refused check).
func TestServerRefusalIsNotCorruption(t *testing.T) {
	e := harness.New(t)
	pc := e.PrivateClient() // it sets maxmemory
	ctx := e.Ctx()
	lean, err := ratelimit.New(pc, one(ratelimit.FixedWindow, ratelimit.PerMinute(10)), ratelimit.WithNamespace(e.NS))
	require.NoError(t, err)
	auto, err := ratelimit.New(pc, one(ratelimit.FixedWindow, ratelimit.PerMinute(1)), ratelimit.WithNamespace(e.NS),
		ratelimit.WithAutoBlock(3, time.Minute, time.Minute))
	require.NoError(t, err)
	_, err = auto.Allow(ctx, "b") // fills b's window: its next check is refused
	require.NoError(t, err)
	_, err = lean.Allow(ctx, "warm") // loads the scripts before memory runs out
	require.NoError(t, err)

	require.NoError(t, pc.ConfigSet(ctx, "maxmemory", "1").Err())
	defer func() { require.NoError(t, pc.ConfigSet(ctx, "maxmemory", "0").Err()) }()
	for name, check := range map[string]func() error{
		"lean counter":  func() error { _, err := lean.Allow(ctx, "a"); return err },
		"refusal count": func() error { _, err := auto.Allow(ctx, "b"); return err },
	} {
		err := check()
		require.Error(t, err, name)
		assert.NotErrorIs(t, err, keys.ErrCorrupt, name)
		assert.Contains(t, err.Error(), "OOM", name)
	}
}
