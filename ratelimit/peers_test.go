package ratelimit_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/ratelimit"
)

// What a user switching from redis_rate or ulule/limiter relies on (issue
// 33; docs/ratelimit.md, "Coming from redis_rate or ulule/limiter").

// A cost above what a rule can ever admit is a refusal that no wait turns
// into an admission (RetryAfter = Never), as redis_rate refuses it, not
// ErrInvalid: on the lean one-rule scripts, the general script and a
// limiter without blocks, it writes nothing and consumes nothing. Reserve
// refuses it too, and Wait returns at once. A cost below 1 stays
// ErrInvalid.
func TestCostAboveCapacityIsRefusedForever(t *testing.T) {
	cases := map[string]struct {
		p    ratelimit.Policy
		capa int
		rule int
		opts []ratelimit.Option
	}{
		"fixed":          {p: one(ratelimit.FixedWindow, ratelimit.PerMinute(5)), capa: 5},
		"sliding":        {p: one(ratelimit.Sliding, ratelimit.PerMinute(5)), capa: 5},
		"swc":            {p: one(ratelimit.SlidingCounter, ratelimit.PerMinute(5)), capa: 5},
		"gcra":           {p: one(ratelimit.GCRA, ratelimit.Limit{Rate: 5, Period: time.Minute, Burst: 3}), capa: 3},
		"gcra/no blocks": {p: one(ratelimit.GCRA, ratelimit.Limit{Rate: 5, Period: time.Minute, Burst: 3}), capa: 3, opts: []ratelimit.Option{ratelimit.WithoutBlocks()}},
		"policy":         {p: seed001, capa: 10},
		"policy/binding": {p: ratelimit.Policy{
			{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerHour(50)},
			{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(4)},
		}, capa: 4, rule: 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			l := newLimiter(t, e, c.p, c.opts...)
			for _, cost := range []int{c.capa + 1, math.MaxInt} {
				res, err := l.AllowN(ctx, "u", cost)
				require.NoError(t, err, "cost %d", cost)
				require.False(t, res.Allowed)
				require.Equal(t, ratelimit.Never, res.RetryAfter, "no wait admits cost %d", cost)
				require.Equal(t, c.capa, res.Limit)
				require.Equal(t, c.capa, res.Remaining, "nothing consumed")
				require.Equal(t, c.rule, res.Rule)
			}
			require.Empty(t, e.Keys(), "a refusal writes nothing")

			res, err := l.Allow(ctx, "u")
			require.NoError(t, err)
			require.True(t, res.Allowed)
			require.Equal(t, c.capa-1, res.Remaining)
			res, err = l.AllowN(ctx, "u", c.capa+1)
			require.NoError(t, err)
			require.Equal(t, ratelimit.Never, res.RetryAfter)
			require.Equal(t, c.capa-1, res.Remaining, "the refusal consumed nothing")
			res, err = l.AllowN(ctx, "u", c.capa-1)
			require.NoError(t, err)
			require.True(t, res.Allowed, "the capacity itself is admitted")

			rv, err := l.Reserve(ctx, "v", c.capa+1)
			require.NoError(t, err)
			require.False(t, rv.Allowed)
			require.Equal(t, ratelimit.Never, rv.RetryAfter)
			require.NoError(t, rv.Cancel(ctx), "nothing to give back")

			// Wait does not sleep until its deadline: no wait helps.
			wctx, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			res, err = l.Wait(wctx, "v", c.capa+1)
			require.ErrorIs(t, err, ratelimit.ErrLimited)
			require.NotErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, ratelimit.Never, res.RetryAfter)
			res, err = l.Wait(context.WithoutCancel(ctx), "v", c.capa+1)
			require.ErrorIs(t, err, ratelimit.ErrLimited, "nor forever without a deadline")
			require.Equal(t, ratelimit.Never, res.RetryAfter)

			for _, bad := range []int{0, -1, math.MinInt} {
				_, err = l.AllowN(ctx, "v", bad)
				require.ErrorIs(t, err, ratelimit.ErrInvalid, "cost %d", bad)
			}
			e.RequireTTLs(nil)
		})
	}
}

// A runtime config that lowers a rule's capacity below a request's cost
// refuses that request for ever (until the config changes), where it was
// ErrInvalid: the same request is fine for another API key.
func TestCostAboveConfiguredCapacityIsRefusedForever(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, seed001, ratelimit.WithRuntimeConfig())
	require.NoError(t, l.SetConfig(ctx, "small", ratelimit.Config{Burst: 2, PerHour: 500}))
	res, err := l.AllowN(ctx, "small", 3)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Equal(t, ratelimit.Never, res.RetryAfter)
	require.Equal(t, 2, res.Limit)
	require.Equal(t, 2, res.Remaining)
	res, err = l.AllowN(ctx, "other", 3)
	require.NoError(t, err)
	require.True(t, res.Allowed, "the policy's burst of 10 admits it")
	res, err = l.AllowN(ctx, "small", 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	// Blocked: the block's wait, not Never.
	require.NoError(t, l.Block(ctx, "small", time.Minute))
	res, err = l.AllowN(ctx, "small", 3)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.NotEqual(t, ratelimit.Never, res.RetryAfter)
	require.LessOrEqual(t, res.RetryAfter, time.Minute)
}

// The deny cache keeps a refusal for ever as a refusal for ever, and only
// for costs at least as large: a unit still goes to Redis and is admitted.
func TestDenyCacheKeepsNever(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l, _ := denyLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(5)))
	harness.WaitFor(t, "a refusal from the deny cache", func() bool {
		res, err := l.AllowN(ctx, "u", 6)
		require.NoError(t, err)
		require.False(t, res.Allowed)
		require.Equal(t, ratelimit.Never, res.RetryAfter, "%+v", res)
		return res.Local
	})
	res, err := l.Allow(ctx, "u")
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.False(t, res.Local)
}

// AllowAtMost takes what every rule has left, up to n, and says how many:
// redis_rate's AllowAtMost, on every algorithm. A GCRA bucket's reset
// follows the grant; a refusal's RetryAfter is the wait for one unit.
func TestAllowAtMost(t *testing.T) {
	for name, c := range map[string]struct {
		p    ratelimit.Policy
		opts []ratelimit.Option
		key  string
	}{
		"fixed":      {p: one(ratelimit.FixedWindow, ratelimit.PerHour(5)), key: "ratelimit:api:{u}:hour"},
		"sliding":    {p: one(ratelimit.Sliding, ratelimit.PerHour(5)), key: "sliding_limit:{u}:hour"},
		"swc":        {p: one(ratelimit.SlidingCounter, ratelimit.PerHour(5))},
		"gcra":       {p: one(ratelimit.GCRA, ratelimit.PerHour(5))},
		"gcra/cfg":   {p: one(ratelimit.GCRA, ratelimit.PerHour(5)), opts: []ratelimit.Option{ratelimit.WithRuntimeConfig()}},
		"gcra/noblk": {p: one(ratelimit.GCRA, ratelimit.PerHour(5)), opts: []ratelimit.Option{ratelimit.WithoutBlocks()}},
	} {
		t.Run(name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			l := newLimiter(t, e, c.p, c.opts...)
			n, res, err := l.AllowAtMost(ctx, "u", 2)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			if c.p[0].Algorithm == ratelimit.GCRA {
				exact(t, e, res, true, 5, 3, 0, 24*time.Minute) // two 12-minute emissions
			}
			require.True(t, res.Allowed)
			require.Equal(t, 3, res.Remaining)
			n, res, err = l.AllowAtMost(ctx, "u", 10)
			require.NoError(t, err)
			require.Equal(t, 3, n, "what was left, not the 10 asked")
			require.True(t, res.Allowed)
			require.Zero(t, res.RetryAfter)
			require.Equal(t, 0, res.Remaining)
			if c.key != "" {
				require.EqualValues(t, 5, count(t, e, e.NS.Prefix+c.key))
			}
			peek, err := l.Peek(ctx, "u")
			require.NoError(t, err)
			require.Equal(t, 0, peek.Remaining)

			n, res, err = l.AllowAtMost(ctx, "u", 1)
			require.NoError(t, err)
			require.Zero(t, n)
			require.False(t, res.Allowed)
			require.Positive(t, res.RetryAfter)
			require.Less(t, res.RetryAfter, 2*time.Hour, "the wait for one unit")
			require.InDelta(t, peek.RetryAfter.Milliseconds(), res.RetryAfter.Milliseconds(), float64((late(e) + 20*time.Millisecond).Milliseconds()))

			for _, bad := range []int{0, -3} {
				_, _, err = l.AllowAtMost(ctx, "w", bad)
				require.ErrorIs(t, err, ratelimit.ErrInvalid)
			}
			n, res, err = l.AllowAtMost(ctx, "w", math.MaxInt)
			require.NoError(t, err)
			require.Equal(t, 5, n, "n above every capacity takes the capacity")
			require.Equal(t, 0, res.Remaining)
			e.RequireTTLs(nil)
		})
	}
}

// In a policy the grant is what every rule can spare; all or nothing
// still holds (each rule counts the grant); a block refuses.
func TestAllowAtMostPolicy(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	gcra := ratelimit.Rule{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 60, Period: time.Minute, Burst: 10}}
	l := newLimiter(t, e, ratelimit.Policy{gcra, {Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(4)}})
	n, res, err := l.AllowAtMost(ctx, "u", 10)
	require.NoError(t, err)
	require.Equal(t, 4, n, "the hourly rule binds")
	require.Equal(t, 1, res.Rule)
	require.Equal(t, 0, res.Remaining)
	require.EqualValues(t, 4, count(t, e, e.NS.Prefix+"ratelimit:api:{u}:hour"))
	// the GCRA rule counted the same 4 (a limiter of that rule alone
	// shares its key)
	g := newLimiter(t, e, ratelimit.Policy{gcra})
	peek, err := g.Peek(ctx, "u")
	require.NoError(t, err)
	require.Equal(t, 6, peek.Remaining)
	n, res, err = l.AllowAtMost(ctx, "u", 10)
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, res.Allowed)
	require.Equal(t, 1, res.Rule)

	require.NoError(t, l.Block(ctx, "b", time.Minute))
	n, res, err = l.AllowAtMost(ctx, "b", 3)
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, res.Allowed)
	require.LessOrEqual(t, res.RetryAfter, time.Minute)
	require.Positive(t, res.RetryAfter)
}

// A lost reply of AllowAtMost on a policy with a Sliding rule: the resend
// finds the call's log entries and reports the first grant, however many
// it took; nothing is counted twice.
func TestLostReplyOfAllowAtMostIsRecognised(t *testing.T) {
	for name, pol := range map[string]ratelimit.Policy{
		"sliding": one(ratelimit.Sliding, ratelimit.PerHour(5)),
		"policy": {
			{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerHour(5)},
			{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(50)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			l, p := proxied(t, e, pol)
			for i, c := range []struct{ n, want, remaining int }{{3, 3, 2}, {10, 2, 0}, {1, 0, 0}} {
				p.LoseReply("{u}")
				got, res, err := l.AllowAtMost(ctx, "u", c.n)
				require.NoError(t, err)
				require.EqualValues(t, i+1, p.Lost())
				require.Equal(t, c.want, got, "call %d", i)
				require.Equal(t, c.want > 0, res.Allowed)
				require.Equal(t, c.remaining, res.Remaining)
			}
			require.EqualValues(t, 5, count(t, e, e.NS.Prefix+"sliding_limit:{u}:hour"), "logged once")
			if len(pol) > 1 {
				require.EqualValues(t, 5, count(t, e, e.NS.Prefix+"ratelimit:api:{u}:hour"), "counted once")
			}
		})
	}
}

// In shadow mode AllowAtMost reports all n granted and consumes only what
// the policy granted; the hook sees each decision.
func TestAllowAtMostShadow(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	var seen []int
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(2)), ratelimit.WithShadow(),
		ratelimit.WithDecisionHook(func(_ context.Context, _ string, cost int, _ ratelimit.Result, _ error) { seen = append(seen, cost) }))
	n, res, err := l.AllowAtMost(ctx, "u", 5)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.True(t, res.Allowed)
	require.True(t, res.Shadowed, "the policy granted 2")
	n, res, err = l.AllowAtMost(ctx, "u", 1)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, res.Shadowed)
	require.EqualValues(t, 2, count(t, e, e.NS.Prefix+"ratelimit:api:{u}:hour"))
	require.Equal(t, []int{5, 1}, seen, "the hook sees the units reported granted")
}
