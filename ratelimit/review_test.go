package ratelimit_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/ratelimit"
)

// A minute limiter's trim and TTL must not wipe an hourly limiter's log on
// the same identifier: their logs are separate keys (window segment).
func TestSlidingLimitersWithDifferentWindowsKeepSeparateLogs(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	hourly := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerHour(10)))
	minute := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerMinute(5)))
	for i := 0; i < 10; i++ {
		r, err := hourly.Allow(ctx, "u")
		require.NoError(t, err)
		require.True(t, r.Allowed)
	}
	e.Advance(2 * time.Minute) // miniredis only
	r, err := minute.Allow(ctx, "u")
	require.NoError(t, err)
	require.True(t, r.Allowed)
	for _, p := range []func() (ratelimit.Result, error){
		func() (ratelimit.Result, error) { return hourly.Peek(ctx, "u") },
		func() (ratelimit.Result, error) { return hourly.Allow(ctx, "u") },
	} {
		r, err = p()
		require.NoError(t, err)
		require.False(t, r.Allowed, "the hourly log is intact: %+v", r)
		require.Equal(t, 0, r.Remaining)
	}
	ttl, err := e.Client.PTTL(ctx, e.NS.Prefix+"sliding_limit:{u}:hour").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 57*time.Minute)
}

// On the seeds' exact keys (no window), limiters share the log: the TTL one
// sets is never shortened by another with a shorter window.
func TestSharedLogTTLNeverShortened(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for _, opt := range []ratelimit.Option{ratelimit.WithWindowlessLogKey(), ratelimit.WithRateLimitKey()} {
		hourly := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerHour(10)), opt)
		policy := newLimiter(t, e, ratelimit.Policy{
			{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerSecond(5)},
			{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerSecond(5)},
		}, opt)
		lean := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerSecond(5)), opt)
		_, err := hourly.Allow(ctx, "u")
		require.NoError(t, err)
		_, err = policy.Allow(ctx, "u")
		require.NoError(t, err)
		_, err = lean.Allow(ctx, "u")
		require.NoError(t, err)
		ks := e.Keys()
		var log string
		for _, k := range ks {
			if strings.Contains(k, "sliding_limit:{u}") || strings.Contains(k, "rate_limit:{u}") {
				log = k
			}
		}
		require.NotEmpty(t, log, "%v", ks)
		ttl, err := e.Client.PTTL(ctx, log).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 59*time.Minute, log)
		require.NoError(t, hourly.Reset(ctx, "u"))
		require.NoError(t, policy.Reset(ctx, "u"))
	}
	_, err := ratelimit.New(e.Client, one(ratelimit.Sliding, ratelimit.PerHour(1)),
		ratelimit.WithRateLimitKey(), ratelimit.WithWindowlessLogKey())
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
}

// maxBlock is the longest Block, as Block's doc states it.
const maxBlock = 366 * 24 * time.Hour

func TestBlockBoundsAndKeepsTheLongest(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(5)))
	bk := e.NS.Prefix + "ratelimit:block:{b}"
	for _, d := range []time.Duration{math.MaxInt64, maxBlock + 1, 0, 999 * time.Microsecond} {
		require.ErrorIs(t, l.Block(ctx, "b", d), ratelimit.ErrInvalid, "%v", d)
	}
	require.Empty(t, e.Keys())
	require.NoError(t, l.Block(ctx, "b", maxBlock))
	ttl, err := e.Client.PTTL(ctx, bk).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, maxBlock-time.Minute)
	require.NoError(t, l.Reset(ctx, "b"))

	// An operator's 24h ban is not cut short by a 1s automatic block.
	require.NoError(t, l.Block(ctx, "b", 24*time.Hour))
	require.NoError(t, l.Block(ctx, "b", time.Second))
	ttl, err = e.Client.PTTL(ctx, bk).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 23*time.Hour)
	// A longer block lengthens a shorter one.
	require.NoError(t, l.Reset(ctx, "b"))
	require.NoError(t, l.Block(ctx, "b", time.Second))
	require.NoError(t, l.Block(ctx, "b", time.Hour))
	ttl, err = e.Client.PTTL(ctx, bk).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute)
	// Rounded up to whole milliseconds, sent with PX.
	require.NoError(t, l.Reset(ctx, "b"))
	require.NoError(t, l.Block(ctx, "b", 1500*time.Microsecond))
	ttl, err = e.Client.PTTL(ctx, bk).Result()
	require.NoError(t, err)
	// (on a loaded machine the 2 ms may be over before PTTL: 0 or gone)
	require.True(t, ttl <= 2*time.Millisecond, "%v", ttl)

	// A block key without a TTL blocks (for maxBlock), in both scripts.
	require.NoError(t, e.Client.Set(ctx, bk, "1", 0).Err())
	defer e.Client.Del(ctx, bk)
	general := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(5)), ratelimit.WithRuntimeConfig())
	for _, f := range []func() (ratelimit.Result, error){
		func() (ratelimit.Result, error) { return l.Allow(ctx, "b") },
		func() (ratelimit.Result, error) { return l.Peek(ctx, "b") },
		func() (ratelimit.Result, error) { return general.Allow(ctx, "b") },
	} {
		r, err := f()
		require.NoError(t, err)
		require.False(t, r.Allowed)
		require.Equal(t, maxBlock, r.RetryAfter)
	}
	require.NoError(t, l.Block(ctx, "b", time.Second))
	ttl, err = e.Client.PTTL(ctx, bk).Result()
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), ttl, "a TTL-less block is the longest")
}

func TestRuntimeConfigEnforcesNewsLimits(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	sl := newLimiter(t, e, ratelimit.Policy{
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(5)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(500)},
	}, ratelimit.WithRuntimeConfig())
	gc := newLimiter(t, e, one(ratelimit.GCRA, ratelimit.PerMinute(5)), ratelimit.WithRuntimeConfig())
	for _, c := range []struct {
		l     *ratelimit.Limiter
		cfg   ratelimit.Config
		field string
	}{
		{sl, ratelimit.Config{PerMinute: 5_000_000}, "per_minute"},
		{sl, ratelimit.Config{PerDay: 1 << 41}, "per_day"},
		{gc, ratelimit.Config{PerMinute: 6_000_001}, "per_minute"}, // under 10µs per request
		{gc, ratelimit.Config{Burst: -1}, "burst"},
	} {
		err := c.l.SetConfig(ctx, "k", c.cfg)
		require.ErrorIs(t, err, ratelimit.ErrInvalid)
		require.Contains(t, err.Error(), c.field)
	}
	require.NoError(t, sl.SetConfig(ctx, "k", ratelimit.Config{PerMinute: 100_000, PerHour: 1 << 40}))
	require.NoError(t, gc.SetConfig(ctx, "g", ratelimit.Config{PerMinute: 6_000_000, Burst: 1 << 40}))

	// Written by other means, the same values are reported by the script
	// as corrupt, naming the config key and the field, and nothing is
	// written.
	ck := e.NS.Prefix + "ratelimit:config:{raw}"
	for _, c := range []struct {
		l     *ratelimit.Limiter
		field string
		value string
	}{
		{sl, "per_minute", "5000000"},
		{gc, "per_minute", "6000001"},
	} {
		require.NoError(t, e.Client.HSet(ctx, ck, c.field, c.value).Err())
		_, err := c.l.AllowN(ctx, "raw", 3)
		require.ErrorIs(t, err, keys.ErrCorrupt)
		require.Contains(t, err.Error(), ck)
		require.Contains(t, err.Error(), c.field)
		require.NoError(t, e.Client.Del(ctx, ck).Err())
	}
	// A cost above what any config could allow is refused for ever.
	res, err := sl.AllowN(ctx, "raw", 100_001)
	require.NoError(t, err)
	require.Equal(t, ratelimit.Never, res.RetryAfter)
	// Only what SetConfig writes is accepted, by the script and by Config.
	for _, v := range []string{"0x10", " 5", "1e3", "5.0", "05", "+5", "-5", "0", "inf", "nan", "99999999999999"} {
		require.NoError(t, e.Client.HSet(ctx, ck, "per_minute", v).Err())
		_, err := sl.Allow(ctx, "raw")
		require.ErrorIs(t, err, keys.ErrCorrupt, "%q", v)
		_, err = sl.Config(ctx, "raw")
		require.ErrorIs(t, err, keys.ErrCorrupt, "%q", v)
	}
	require.NoError(t, e.Client.Del(ctx, ck).Err())
	for _, k := range e.Keys() {
		require.Contains(t, k, "ratelimit:config:", "only the configs are written")
	}
}

// Stored numbers are validated strictly, by the lean and the general
// scripts alike: a corrupt value is an error naming the key, never a
// refusal with RetryAfter 0 or a silent admission.
func TestStrictStoredNumbers(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	bad := []string{"inf", "-inf", "-5", "nan", "1e300", "-1e300", "0x10", " 5", "5.0", "1e3", "", "99999999999999999999"}
	for _, a := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.FixedWindow} {
		lean := newLimiter(t, e, one(a, ratelimit.PerMinute(5)))
		general := newLimiter(t, e, one(a, ratelimit.PerMinute(5)), ratelimit.WithRuntimeConfig())
		k := e.NS.Prefix + map[ratelimit.Algorithm]string{
			ratelimit.GCRA: "ratelimit:gcra:{s}:minute", ratelimit.FixedWindow: "ratelimit:api:{s}:minute"}[a]
		for _, v := range append(bad, "-100") {
			require.NoError(t, e.Client.Set(ctx, k, v, time.Minute).Err())
			for name, f := range map[string]func() (ratelimit.Result, error){
				"lean":    func() (ratelimit.Result, error) { return lean.Allow(ctx, "s") },
				"peek":    func() (ratelimit.Result, error) { return lean.Peek(ctx, "s") },
				"general": func() (ratelimit.Result, error) { return general.Allow(ctx, "s") },
			} {
				r, err := f()
				require.ErrorIs(t, err, keys.ErrCorrupt, "%v %s %q: %+v", a, name, v, r)
				var ce *keys.CorruptError
				require.True(t, errors.As(err, &ce))
				require.Equal(t, k, ce.Key)
				got, err := e.Client.Get(ctx, k).Result()
				require.NoError(t, err)
				require.Equal(t, v, got, "left as it was")
			}
		}
		require.NoError(t, e.Client.Del(ctx, k).Err())
	}
}

// A sliding log scored in the far future (or +inf) is corrupt, not a
// refusal with a nonsensical RetryAfter.
func TestSlidingLogFutureScoreIsCorrupt(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	lean := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerMinute(1)))
	k := e.NS.Prefix + "sliding_limit:{f}:minute"
	for _, score := range []float64{math.Inf(1), 1e18} {
		require.NoError(t, e.Client.ZAdd(ctx, k, redis.Z{Score: score, Member: "x"}).Err())
		require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())
		for _, f := range []func() (ratelimit.Result, error){
			func() (ratelimit.Result, error) { return lean.Allow(ctx, "f") },
			func() (ratelimit.Result, error) { return lean.Peek(ctx, "f") },
		} {
			r, err := f()
			require.ErrorIs(t, err, keys.ErrCorrupt, "%v: %+v", score, r)
		}
		require.NoError(t, e.Client.Del(ctx, k).Err())
	}
}

// The sliding log is the seeds' own: Unix-millisecond scores. Requests a
// seed application logged (Date.now() scores) count against the limit and
// are trimmed once out of the window, and a seed reader's ZCOUNT over the
// last window counts ours.
func TestSlidingLogSharedWithSeedApp(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerMinute(5)), ratelimit.WithWindowlessLogKey())
	k := e.NS.Prefix + "sliding_limit:{app}"
	ms := e.Now().UnixMilli()
	require.NoError(t, e.Client.ZAdd(ctx, k,
		redis.Z{Score: float64(ms - 10_000), Member: fmt.Sprint(ms-10_000) + "-seed"},
		redis.Z{Score: float64(ms - 70_000), Member: fmt.Sprint(ms-70_000) + "-old"}).Err())
	require.NoError(t, e.Client.Expire(ctx, k, time.Minute).Err())

	r, err := l.Allow(ctx, "app")
	require.NoError(t, err)
	require.True(t, r.Allowed)
	require.Equal(t, 3, r.Remaining, "5 - the seed's request in the window - this one")

	zs, err := e.Client.ZRangeWithScores(ctx, k, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, zs, 2, "the seed's request from 70 s ago was trimmed")
	require.Equal(t, fmt.Sprint(ms-10_000)+"-seed", zs[0].Member)
	after := e.Now().UnixMilli()
	require.GreaterOrEqual(t, zs[1].Score, float64(ms), "ours is scored in Unix ms")
	require.LessOrEqual(t, zs[1].Score, float64(after+1))
	n, err := e.Client.ZCount(ctx, k, fmt.Sprint(after-60_000), "+inf").Result()
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "a seed reader's count over the last minute")
}

// A request logged in the middle of a millisecond counts a whole period
// after it, never less: its score is rounded up.
func TestSlidingLogRoundsUp(t *testing.T) {
	e := harness.New(t)
	if e.Mini == nil {
		t.Skip("needs a clock between milliseconds; miniredis only")
	}
	ctx := e.Ctx()
	for _, opts := range [][]ratelimit.Option{nil, {ratelimit.WithRuntimeConfig()}} {
		l := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerSecond(1)), opts...)
		id := fmt.Sprint("r", len(opts))
		e.Advance(400 * time.Microsecond) // now x.4 ms
		r, err := l.Allow(ctx, id)
		require.NoError(t, err)
		require.True(t, r.Allowed)
		require.Equal(t, time.Second+600*time.Microsecond, r.ResetAfter, "logged at the next millisecond")
		e.Advance(time.Second) // x.4 ms + 1 s: the log says x+1 ms + 1 s
		r, err = l.Allow(ctx, id)
		require.NoError(t, err)
		require.False(t, r.Allowed, "still in the window by the rounded score (%d opts): %+v", len(opts), r)
		require.Equal(t, 600*time.Microsecond, r.RetryAfter)
		e.Advance(600 * time.Microsecond)
		r, err = l.Allow(ctx, id)
		require.NoError(t, err)
		require.True(t, r.Allowed)
	}
}
