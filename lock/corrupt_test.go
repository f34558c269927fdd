package lock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Every key pattern of the package, holding a wrong type, garbage or an
// out-of-range value: the operation that reads it either fails with
// keys.ErrCorrupt naming that exact key, or repairs it as documented.
func TestCorruptionTable(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	type plant func(ctx context.Context, key string) error
	set := func(v string, ttl time.Duration) plant {
		return func(ctx context.Context, k string) error { return e.Client.Set(ctx, k, v, ttl).Err() }
	}
	list := func(ctx context.Context, k string) error {
		if err := e.Client.RPush(ctx, k, "foreign").Err(); err != nil {
			return err
		}
		return e.Client.Expire(ctx, k, time.Minute).Err()
	}
	zadd := func(score float64) plant {
		return func(ctx context.Context, k string) error {
			if err := e.Client.ZAdd(ctx, k, redisZ(score, "foreign")).Err(); err != nil {
				return err
			}
			return e.Client.Expire(ctx, k, time.Minute).Err()
		}
	}
	year3000 := float64(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	acquire := func(ctx context.Context, id string) error {
		l, err := c.TryAcquire(ctx, "doc", id, time.Second)
		if err == nil {
			_ = l.Release(ctx)
		}
		return err
	}
	fair := func(ctx context.Context, id string) error {
		l, err := c.TryAcquire(ctx, "doc", id, time.Second, WithFairness(0))
		if err == nil {
			_ = l.Release(ctx)
		}
		return err
	}
	semaphore := func(ctx context.Context, id string) error {
		s, err := c.Semaphore("doc", id, 1)
		if err != nil {
			return err
		}
		l, err := s.TryAcquire(ctx, time.Second)
		if err == nil {
			_ = l.Release(ctx)
		}
		return err
	}
	claim := func(ctx context.Context, id string) error {
		g, err := c.Interval(id, time.Hour, time.Second)
		if err != nil {
			return err
		}
		_, err = g.Claim(ctx)
		if err == nil {
			_, err = g.LastRun(ctx)
		}
		return err
	}
	for i, tc := range []struct {
		name    string
		key     *keys.Template
		args    func(id string) []string
		plant   plant
		op      func(ctx context.Context, id string) error
		corrupt bool // else: the op succeeds (documented repair)
	}{
		{"lock: wrong type", lockKey, docID, list, acquire, true},
		{"lock: no TTL", lockKey, docID, set("someone:1:1000", 0), acquire, true},
		{"fence: wrong type", fenceKey, docID, list, acquire, true},
		{"fence: garbage", fenceKey, docID, set("abc", time.Minute), acquire, true},
		{"fence: out of range", fenceKey, docID, set("9007199254740991", time.Minute), acquire, true},
		{"fence: negative", fenceKey, docID, set("-5", time.Minute), acquire, true},
		{"queue: wrong type", queueKey, docID, set("x", time.Minute), fair, true},
		{"queue: foreign member is dropped", queueKey, docID, list, fair, false},
		{"waiters: wrong type", waitersKey, docID, set("x", time.Minute), fair, true},
		{"waiters: deadline in year 3000 is dropped", waitersKey, docID, zadd(year3000), fair, false},
		{"semaphore: wrong type", semKey, docID, set("x", time.Minute), semaphore, true},
		{"semaphore: permit never expiring is dropped", semKey, docID, zadd(year3000), semaphore, false},
		{"last run: wrong type", cronKey, jobID, list, claim, true},
		{"last run: garbage", cronKey, jobID, set("soon", 0), claim, true},
		{"last run: a year ahead", cronKey, jobID, set(strconv.FormatInt(time.Now().AddDate(1, 0, 0).UnixMilli(), 10), 0), claim, true},
		{"run lease: no TTL", lockKey, cronID, set("someone:1:1000", 0), claim, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "c" + strconv.Itoa(i)
			k, err := tc.key.Key(e.NS, tc.args(id)...)
			require.NoError(t, err)
			require.NoError(t, tc.plant(ctx, k))
			err = tc.op(ctx, id)
			if !tc.corrupt {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, keys.ErrCorrupt)
			var ce *keys.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, k, ce.Key, "the error names the key at fault")
			assert.Contains(t, err.Error(), k)
			require.NoError(t, e.Client.Del(ctx, k).Err())
		})
	}
}

func docID(id string) []string  { return []string{"doc", id} }
func jobID(id string) []string  { return []string{id} }
func cronID(id string) []string { return []string{CronResource, id} }

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// Every duration and size input has a bound and a clear error beyond it,
// before anything is written.
func TestInputBounds(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	for _, opts := range [][]Option{
		{WithMaxTTL(maxLease + time.Millisecond)},
		{WithMaxTTL(0)},
		{WithFenceTTL(maxFenceTTL + time.Second)},
		{WithOwner("\xff")},
		{WithOwner("a:b")},
	} {
		_, err := New(e.Client, opts...)
		require.ErrorIs(t, err, ErrInvalid)
	}
	_, err := c.TryAcquire(ctx, "doc", "x", defaultMaxTTL+time.Millisecond)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.Interval("job", maxInterval+time.Millisecond, 0)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.Semaphore("doc", "x", maxPermits+1)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Empty(t, e.Keys(), "nothing written")
}
