package lock

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// corruptAt requires err to match keys.ErrCorrupt and name k.
func corruptAt(t *testing.T, err error, k string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, keys.ErrCorrupt, "%v", err)
	var ce *keys.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, k, ce.Key, "the error names the key at fault: %v", err)
}

// docKey is tm's key of ("doc", id) under e's namespace.
func docKey(t *testing.T, e *harness.Env, tm *keys.Template, id string) string {
	t.Helper()
	k, err := tm.Key(e.NS, "doc", id)
	require.NoError(t, err)
	return k
}

// TestAcquireCorruptFenceWritesNothing: a fence key that is not a token
// (a hash, or a string that does not parse) fails TryAcquire naming it,
// and the lease the script set first is taken back: no lease is left
// behind for an owner ID nobody has, and the next call is corrupt again,
// not "not obtained" for the lease's TTL.
func TestAcquireCorruptFenceWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	for i, tc := range []struct {
		name  string
		plant func(k string) error
	}{
		{"wrong type", func(k string) error { return e.Client.HSet(ctx, k, "f", "v").Err() }},
		{"garbage", func(k string) error { return e.Client.Set(ctx, k, "garbage", 0).Err() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "a" + strconv.Itoa(i)
			fk := docKey(t, e, fenceKey, id)
			require.NoError(t, tc.plant(fk))
			require.NoError(t, e.Client.Expire(ctx, fk, time.Minute).Err())
			before := e.Snapshot()
			for try := range 2 {
				_, err := c.TryAcquire(ctx, "doc", id, 10*time.Second)
				corruptAt(t, err, fk)
				assert.Equal(t, before, e.Snapshot(), "try %d: nothing written", try)
			}
		})
	}
}

// TestTryLockCorruptWritesNothing: TryLock on a free read-write lock
// checks the waiting writers and the fence before its first write: a
// waiting-writers key of another type, or a fence that does not parse
// while a stale reader waits to be pruned, fails the call naming the key,
// with no fence issued, no writer lease set and no reader pruned.
func TestTryLockCorruptWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	for i, tc := range []struct {
		name  string
		plant func(t *testing.T, id string) string // returns the corrupt key
	}{
		{"writers: wrong type", func(t *testing.T, id string) string {
			k := docKey(t, e, writersKey, id)
			require.NoError(t, e.Client.Set(ctx, k, "x", time.Minute).Err())
			return k
		}},
		{"fence: garbage, with a stale reader", func(t *testing.T, id string) string {
			rk := docKey(t, e, readersKey, id)
			require.NoError(t, e.Client.ZAdd(ctx, rk, redisZ(float64(e.Now().Add(-time.Second).UnixMilli()), "stale")).Err())
			require.NoError(t, e.Client.Expire(ctx, rk, time.Minute).Err())
			k := docKey(t, e, fenceKey, id)
			require.NoError(t, e.Client.Set(ctx, k, "garbage", time.Minute).Err())
			return k
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "w" + strconv.Itoa(i)
			m, err := c.RWMutex("doc", id)
			require.NoError(t, err)
			k := tc.plant(t, id)
			before := e.Snapshot()
			_, err = m.TryLock(ctx, 10*time.Second)
			corruptAt(t, err, k)
			assert.Equal(t, before, e.Snapshot(), "nothing written")
		})
	}
}

// TestWaitingWriteLockCorruptLeaseWritesNothing: a writer that waits
// (place keep > 0) finds a writer lease without a TTL. The script reports
// it before it keeps the caller's place among the waiting writers, so a
// run that is not followed by Lock's clean-up leaves nothing behind.
func TestWaitingWriteLockCorruptLeaseWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	m, err := c.RWMutex("doc", "waiting")
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, m.wKeys[0], "someone:1:1000", 0).Err())
	before := e.Snapshot()
	_, err = c.run.Run(ctx, rwWriteOp, m.wKeys, c.newOwner(), c.msArg(10*time.Second), c.fenceArg, unit.MsCeil(RWKeep), unit.MsCeil(c.opt.maxTTL))
	corruptAt(t, err, m.wKeys[0])
	assert.Equal(t, before, e.Snapshot(), "nothing written: no place among the waiting writers")
	n, err := e.Client.Exists(ctx, m.wKeys[3]).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "no waiting writers key")
}

// TestFairAcquireCorruptWritesNothing: a fair TryAcquire of a free lock
// with an expired waiter in the queue checks the fence (and a lease's
// TTL) before it prunes the waiter: a fence that does not parse, or a
// lease without a TTL, fails the call naming the key with the queue and
// the waiters' deadlines as they were.
func TestFairAcquireCorruptWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	for i, tc := range []struct {
		name  string
		plant func(t *testing.T, id string) string // returns the corrupt key
	}{
		{"fence: garbage", func(t *testing.T, id string) string {
			k := docKey(t, e, fenceKey, id)
			require.NoError(t, e.Client.Set(ctx, k, "garbage", time.Minute).Err())
			return k
		}},
		{"fence: wrong type", func(t *testing.T, id string) string {
			k := docKey(t, e, fenceKey, id)
			require.NoError(t, e.Client.HSet(ctx, k, "f", "v").Err())
			require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
			return k
		}},
		{"lock: no TTL", func(t *testing.T, id string) string {
			k := docKey(t, e, lockKey, id)
			require.NoError(t, e.Client.Set(ctx, k, "someone:1:1000", 0).Err())
			return k
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "f" + strconv.Itoa(i)
			qk, wk := docKey(t, e, queueKey, id), docKey(t, e, waitersKey, id)
			require.NoError(t, e.Client.RPush(ctx, qk, "gone").Err())
			require.NoError(t, e.Client.Expire(ctx, qk, time.Minute).Err())
			require.NoError(t, e.Client.ZAdd(ctx, wk, redis.Z{Score: float64(e.Now().Add(-time.Second).UnixMilli()), Member: "gone"}).Err())
			require.NoError(t, e.Client.Expire(ctx, wk, time.Minute).Err())
			k := tc.plant(t, id)
			before := e.Snapshot()
			_, err := c.TryAcquire(ctx, "doc", id, 10*time.Second, WithFairness(0))
			corruptAt(t, err, k)
			assert.Equal(t, before, e.Snapshot(), "nothing written: the expired waiter is still queued")
		})
	}
}
