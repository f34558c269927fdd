package ratelimit_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/ratelimit"
)

// denyLimiter is a limiter WithDenyCache on a client of its own that
// counts round trips.
func denyLimiter(t *testing.T, e *harness.Env, p ratelimit.Policy, opts ...ratelimit.Option) (*ratelimit.Limiter, *harness.Trips) {
	t.Helper()
	l, trips := countedLimiter(t, e, p, append([]ratelimit.Option{ratelimit.WithDenyCache(time.Hour)}, opts...)...)
	t.Cleanup(func() { _ = l.Close() })
	return l, trips
}

// refusedLocally floods id until l refuses it from its cache (the first
// refusal opens the subscription; refusals are cached once it is live).
func refusedLocally(t *testing.T, l *ratelimit.Limiter, e *harness.Env, id string) {
	t.Helper()
	ctx := e.Ctx()
	harness.WaitFor(t, "a refusal from the deny cache", func() bool {
		res, err := l.Allow(ctx, id)
		require.NoError(t, err)
		return res.Local
	})
}

func TestDenyCacheValidated(t *testing.T) {
	e := harness.New(t)
	for _, d := range []time.Duration{0, -time.Second, 366*24*time.Hour + time.Hour} {
		_, err := ratelimit.New(e.Client, one(ratelimit.GCRA, ratelimit.PerSecond(5)), ratelimit.WithDenyCache(d))
		require.ErrorIs(t, err, ratelimit.ErrInvalid, "%v", d)
	}
}

// Under a flood from one refused identifier, Redis sees nothing until the
// refusal's RetryAfter has passed; a smaller request still goes to Redis.
func TestDenyCacheFlood(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l, trips := denyLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(5)))
	res, err := l.AllowN(ctx, "u", 3)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	refusedLocally(t, l, e, "u")
	before := trips.Total()
	for i := 0; i < 1000; i++ {
		res, err := l.Allow(ctx, "u")
		require.NoError(t, err)
		require.False(t, res.Allowed)
		require.True(t, res.Local)
		require.Greater(t, res.RetryAfter, 59*time.Minute)
		require.Equal(t, 5, res.Limit)
	}
	require.Equal(t, before, trips.Total(), "no Redis call for cached refusals")

	// a refusal of cost 3 does not refuse cost 2 locally
	res, err = l.AllowN(ctx, "v", 5)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.NoError(t, l.Refund(ctx, "v", 2))
	harness.WaitFor(t, "a cached refusal of cost 3", func() bool {
		res, err := l.AllowN(ctx, "v", 3)
		require.NoError(t, err)
		require.False(t, res.Allowed)
		return res.Local
	})
	res, err = l.AllowN(ctx, "v", 2)
	require.NoError(t, err)
	require.True(t, res.Allowed, "a smaller request goes to Redis and fits")
	require.False(t, res.Local)
}

// Reset, Block, Unblock, Refund, SetConfig and DeleteConfig on instance A
// drop B's cached refusal at once (bounded by pub/sub delivery, not by the
// refusal's hour).
func TestDenyCacheClearedFromAnyInstance(t *testing.T) {
	for _, op := range []string{"reset", "refund", "block", "unblock", "setconfig", "deleteconfig"} {
		t.Run(op, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			p := one(ratelimit.Sliding, ratelimit.PerHour(2))
			a := newLimiter(t, e, p, ratelimit.WithRuntimeConfig())
			b, _ := denyLimiter(t, e, p, ratelimit.WithRuntimeConfig())
			if op == "deleteconfig" {
				require.NoError(t, a.SetConfig(ctx, "u", ratelimit.Config{PerHour: 1}))
			}
			if op == "unblock" {
				require.NoError(t, a.Block(ctx, "u", 2*time.Hour))
				harness.WaitFor(t, "B to cache the block", func() bool {
					res, err := b.Allow(ctx, "u")
					require.NoError(t, err)
					return res.Local
				})
			} else {
				used := 2 // the limit
				if op == "deleteconfig" {
					used = 1 // the config's limit
				}
				_, err := b.AllowN(ctx, "u", used)
				require.NoError(t, err)
				refusedLocally(t, b, e, "u")
			}
			switch op {
			case "reset":
				require.NoError(t, a.Reset(ctx, "u"))
			case "refund":
				require.NoError(t, a.Refund(ctx, "u", 1))
			case "block":
				require.NoError(t, a.Block(ctx, "u", 2*time.Hour))
			case "unblock":
				lifted, err := a.Unblock(ctx, "u")
				require.NoError(t, err)
				require.True(t, lifted)
			case "setconfig":
				require.NoError(t, a.SetConfig(ctx, "u", ratelimit.Config{PerHour: 3}))
			case "deleteconfig":
				require.NoError(t, a.DeleteConfig(ctx, "u"))
			}
			harness.WaitFor(t, "B to ask Redis again", func() bool {
				res, err := b.Allow(ctx, "u")
				require.NoError(t, err)
				if op == "block" {
					return !res.Local && res.RetryAfter > time.Hour+59*time.Minute
				}
				return res.Allowed
			})
		})
	}
}

// The invariant on two instances with many goroutines: the deny cache
// never admits what Redis refuses (exactly the limit is admitted) and never
// refuses what Redis would admit (after a Refund on one instance, exactly
// the refunded units are admitted again, across both).
func TestDenyCacheConcurrentInvariant(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const limit = 50
	for _, pol := range []ratelimit.Policy{
		one(ratelimit.FixedWindow, ratelimit.PerHour(limit)),
		{{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerHour(limit)}, {Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: limit}}},
	} {
		a, _ := denyLimiter(t, e, pol)
		b, _ := denyLimiter(t, e, pol)
		id := "u" + pol[0].Algorithm.String()
		var local atomic.Int64
		flood := func(i int) (ratelimit.Result, error) {
			l := a
			if i%2 == 1 {
				l = b
			}
			r, err := l.Allow(ctx, id)
			if r.Local {
				local.Add(1)
			}
			return r, err
		}
		require.EqualValues(t, limit, hammer(t, 100, 20, flood), "exactly the limit")
		require.Positive(t, local.Load(), "the cache refused some")
		refusedLocally(t, a, e, id)
		refusedLocally(t, b, e, id)

		require.NoError(t, a.Refund(ctx, id, 10))
		admitted := 0
		harness.WaitFor(t, "B to see the refund", func() bool {
			res, err := b.Allow(ctx, id)
			require.NoError(t, err)
			if res.Allowed {
				admitted++
			}
			return res.Allowed
		})
		admitted += int(hammer(t, 100, 20, flood))
		require.Equal(t, 10, admitted, "exactly the refunded units, across both instances")
	}
}
