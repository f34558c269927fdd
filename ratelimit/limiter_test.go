package ratelimit_test

import (
	"context"
	"errors"
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

var seed001 = ratelimit.Policy{
	{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 60, Period: time.Minute, Burst: 10}},
	{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(1000)},
	{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(10000)},
}

func TestNewRejectsBadPolicies(t *testing.T) {
	e := harness.New(t)
	sec := time.Second
	cases := map[string]struct {
		p    ratelimit.Policy
		opts []ratelimit.Option
		err  error
	}{
		"empty":            {ratelimit.Policy{}, nil, ratelimit.ErrInvalid},
		"zero rate":        {one(ratelimit.FixedWindow, ratelimit.Limit{Period: sec}), nil, ratelimit.ErrInvalid},
		"negative rate":    {one(ratelimit.GCRA, ratelimit.Limit{Rate: -1, Period: sec}), nil, ratelimit.ErrInvalid},
		"zero period":      {one(ratelimit.Sliding, ratelimit.Limit{Rate: 1}), nil, ratelimit.ErrInvalid},
		"negative period":  {one(ratelimit.Sliding, ratelimit.Limit{Rate: 1, Period: -sec}), nil, ratelimit.ErrInvalid},
		"sub-ms period":    {one(ratelimit.GCRA, ratelimit.Limit{Rate: 1, Period: 1500 * time.Microsecond}), nil, ratelimit.ErrInvalid},
		"negative burst":   {one(ratelimit.GCRA, ratelimit.Limit{Rate: 1, Period: sec, Burst: -1}), nil, ratelimit.ErrInvalid},
		"burst not GCRA":   {one(ratelimit.FixedWindow, ratelimit.Limit{Rate: 1, Period: sec, Burst: 2}), nil, ratelimit.ErrInvalid},
		"no algorithm":     {ratelimit.Policy{{Limit: ratelimit.PerSecond(1)}}, nil, ratelimit.ErrInvalid},
		"huge sliding":     {one(ratelimit.Sliding, ratelimit.PerDay(1_000_000)), nil, ratelimit.ErrInvalid},
		"GCRA too fast":    {one(ratelimit.GCRA, ratelimit.PerSecond(200_000)), nil, ratelimit.ErrInvalid},
		"duplicate period": {ratelimit.Policy{{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerSecond(1)}, {Algorithm: ratelimit.GCRA, Limit: ratelimit.PerSecond(2)}}, nil, ratelimit.ErrInvalid},
		"empty endpoint":   {one(ratelimit.FixedWindow, ratelimit.PerSecond(1)), []ratelimit.Option{ratelimit.WithEndpoint("")}, keys.ErrInvalid},
		"endpoint+rate_limit key": {one(ratelimit.Sliding, ratelimit.PerSecond(1)),
			[]ratelimit.Option{ratelimit.WithEndpoint("/x"), ratelimit.WithRateLimitKey()}, ratelimit.ErrInvalid},
		"bad namespace":       {one(ratelimit.FixedWindow, ratelimit.PerSecond(1)), []ratelimit.Option{ratelimit.WithNamespace(keys.Namespace{Prefix: "a{b"})}, keys.ErrInvalid},
		"negative pipelining": {one(ratelimit.FixedWindow, ratelimit.PerSecond(1)), []ratelimit.Option{ratelimit.WithPipelining(-1)}, ratelimit.ErrInvalid},
		"too many pipelines":  {one(ratelimit.FixedWindow, ratelimit.PerSecond(1)), []ratelimit.Option{ratelimit.WithPipelining(1025)}, ratelimit.ErrInvalid},
		"period over a year":  {one(ratelimit.FixedWindow, ratelimit.Limit{Rate: 1, Period: 367 * 24 * time.Hour}), nil, ratelimit.ErrInvalid},
		"rate over 2^40":      {one(ratelimit.FixedWindow, ratelimit.Limit{Rate: 1<<40 + 1, Period: time.Hour}), nil, ratelimit.ErrInvalid},
		"burst over 2^40":     {one(ratelimit.GCRA, ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 1<<40 + 1}), nil, ratelimit.ErrInvalid},
		"17 rules": {func() ratelimit.Policy {
			var p ratelimit.Policy
			for i := 1; i <= 17; i++ {
				p = append(p, ratelimit.Rule{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.Limit{Rate: 1, Period: time.Duration(i) * time.Second}})
			}
			return p
		}(), nil, ratelimit.ErrInvalid},
		"rate_limit key + windowless": {one(ratelimit.Sliding, ratelimit.PerSecond(1)),
			[]ratelimit.Option{ratelimit.WithRateLimitKey(), ratelimit.WithWindowlessLogKey()}, ratelimit.ErrInvalid},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ratelimit.New(e.Client, c.p, c.opts...)
			require.ErrorIs(t, err, c.err)
		})
	}
	_, err := ratelimit.New(nil, one(ratelimit.GCRA, ratelimit.PerSecond(1)))
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	// A go-redis client that would ignore context deadlines.
	deaf := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = deaf.Close() })
	_, err = ratelimit.New(deaf, one(ratelimit.GCRA, ratelimit.PerSecond(1)))
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	require.Contains(t, err.Error(), "ContextTimeoutEnabled")
	// Error text says each prefix once.
	_, err = ratelimit.New(e.Client, ratelimit.Policy{})
	require.Equal(t, "ratelimit: new: invalid argument: empty policy", err.Error())
}

func TestBadInputWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, seed001, ratelimit.WithEndpoint("GET /x"))
	_, err := l.Allow(ctx, "")
	require.ErrorIs(t, err, keys.ErrInvalid)
	_, err = l.AllowN(ctx, "k1", 0)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	_, err = l.AllowN(ctx, "k1", -3)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	res, err := l.AllowN(ctx, "k1", 11) // above the burst of 10: refused, nothing written
	require.NoError(t, err)
	require.Equal(t, ratelimit.Never, res.RetryAfter)
	_, err = l.Peek(ctx, strings.Repeat("x", 1025))
	require.ErrorIs(t, err, keys.ErrInvalid)
	require.ErrorIs(t, l.Block(ctx, "k1", 0), ratelimit.ErrInvalid)
	require.ErrorIs(t, l.Block(ctx, "k1", -time.Second), ratelimit.ErrInvalid)
	require.ErrorIs(t, l.Block(ctx, "", time.Second), keys.ErrInvalid)
	require.ErrorIs(t, l.Reset(ctx, ""), keys.ErrInvalid)
	require.ErrorIs(t, l.SetConfig(ctx, "k1", ratelimit.Config{PerMinute: 1}), ratelimit.ErrNoRuntimeConfig)
	_, err = l.Config(ctx, "k1")
	require.ErrorIs(t, err, ratelimit.ErrNoRuntimeConfig)
	lc := newLimiter(t, e, seed001, ratelimit.WithRuntimeConfig())
	require.ErrorIs(t, lc.SetConfig(ctx, "k1", ratelimit.Config{PerMinute: -1}), ratelimit.ErrInvalid)
	require.ErrorIs(t, lc.SetConfig(ctx, "", ratelimit.Config{PerMinute: 1}), keys.ErrInvalid)
	require.ErrorIs(t, l.Block(ctx, "k1", 366*24*time.Hour+time.Millisecond), ratelimit.ErrInvalid)
	require.ErrorIs(t, l.Block(ctx, "k1", math.MaxInt64), ratelimit.ErrInvalid)
	require.Empty(t, e.Keys())
}

// A request refused by one rule consumes nothing from the others.
func TestPolicyAllOrNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, ratelimit.Policy{
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(5)},
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(4)},
		{Algorithm: ratelimit.SlidingCounter, Limit: ratelimit.PerMinute(6)},
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 1, Period: time.Second, Burst: 7}},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(3)},
	})
	for i := 0; i < 3; i++ {
		r, err := l.Allow(ctx, "k")
		require.NoError(t, err)
		require.True(t, r.Allowed)
		require.Equal(t, 4, r.Rule, "the day limit binds")
		require.Equal(t, 2-i, r.Remaining)
	}
	for i := 0; i < 5; i++ {
		r, err := l.Allow(ctx, "k")
		require.NoError(t, err)
		require.False(t, r.Allowed)
		require.Equal(t, 4, r.Rule)
	}
	// Nothing but the day limit is spent: lift it and count what is left.
	day := e.NS.Prefix + "ratelimit:api:{k}:day"
	require.NoError(t, e.Client.Del(ctx, day).Err())
	r, err := l.Peek(ctx, "k")
	require.NoError(t, err)
	require.True(t, r.Allowed)
	require.Equal(t, 1, r.Rule, "the sliding log now binds")
	require.Equal(t, 1, r.Remaining, "4 - 3")
	v, err := e.Client.Get(ctx, e.NS.Prefix+"ratelimit:api:{k}:minute").Result()
	require.NoError(t, err)
	require.Equal(t, "3", v)
	n, err := e.Client.ZCard(ctx, e.NS.Prefix+"sliding_limit:{k}:minute").Result()
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	// AllowN is all or nothing too.
	r, err = l.AllowN(ctx, "k", 2)
	require.NoError(t, err)
	require.False(t, r.Allowed)
	require.Equal(t, 1, r.Remaining)
	e.RequireTTLs(nil)
}

func TestPeekBlockReset(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(time.Second)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(2)))
	other := newLimiter(t, e, one(ratelimit.GCRA, ratelimit.PerSecond(5)))
	for i := 0; i < 3; i++ {
		r, err := l.Peek(ctx, "k")
		require.NoError(t, err)
		want(t, r, true, 2, 2, 0, 0)
	}
	require.Empty(t, e.Keys(), "Peek writes nothing")
	_, err := l.Allow(ctx, "k")
	require.NoError(t, err)

	require.NoError(t, l.Block(ctx, "k", 500*time.Millisecond))
	for _, lim := range []*ratelimit.Limiter{l, other} {
		r, err := lim.Allow(ctx, "k")
		require.NoError(t, err)
		require.False(t, r.Allowed, "blocked in every limiter of the namespace")
		// time passes between Block and this check (much of it on a
		// loaded real server): the block's remaining time, never more
		require.Greater(t, r.RetryAfter, time.Duration(0))
		require.LessOrEqual(t, r.RetryAfter, 500*time.Millisecond)
	}
	r, err := l.Peek(ctx, "k")
	require.NoError(t, err)
	require.False(t, r.Allowed)
	e.Advance(600 * time.Millisecond)
	r, err = l.Allow(ctx, "k")
	require.NoError(t, err)
	require.True(t, r.Allowed, "block over, counters untouched by the refusals")
	require.Equal(t, 0, r.Remaining)

	require.NoError(t, l.Block(ctx, "k", time.Hour))
	require.NoError(t, l.Reset(ctx, "k"))
	r, err = l.Allow(ctx, "k")
	require.NoError(t, err)
	require.True(t, r.Allowed)
	require.Equal(t, 1, r.Remaining, "Reset cleared the counter and the block")
}

func TestWithoutBlocks(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	blocked := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(5)))
	policy := ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerMinute(5)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(50)},
	}
	free := []*ratelimit.Limiter{
		newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(5)), ratelimit.WithoutBlocks()),
		newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerHour(5)), ratelimit.WithoutBlocks()),
		newLimiter(t, e, policy, ratelimit.WithoutBlocks()),
	}
	require.NoError(t, free[0].Block(ctx, "k", time.Minute))
	r, err := blocked.Allow(ctx, "k")
	require.NoError(t, err)
	require.False(t, r.Allowed, "the block key is still written and honoured by others")
	for _, l := range free {
		r, err := l.Allow(ctx, "k")
		require.NoError(t, err)
		require.True(t, r.Allowed, "%v ignores blocks", l.Policy())
		require.Equal(t, 4, r.Remaining)
		r, err = l.Peek(ctx, "k")
		require.NoError(t, err)
		require.True(t, r.Allowed)
	}
	// A block key without a TTL is not read, so not reported either.
	require.NoError(t, e.Client.Persist(ctx, e.NS.Prefix+"ratelimit:block:{k}").Err())
	_, err = free[0].Allow(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, free[0].Reset(ctx, "k"))
	r, err = blocked.Allow(ctx, "k")
	require.NoError(t, err)
	require.True(t, r.Allowed, "Reset lifts the block")
}

func TestRuntimeConfig(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, seed001, ratelimit.WithRuntimeConfig())

	c, err := l.Config(ctx, "key1")
	require.NoError(t, err)
	require.Equal(t, ratelimit.Config{}, c)

	// Defaults: burst 10.
	r, err := l.AllowN(ctx, "key0", 10)
	require.NoError(t, err)
	require.True(t, r.Allowed)
	require.Equal(t, 10, r.Limit)

	cfg := ratelimit.Config{PerMinute: 120, PerHour: 5, Burst: 20}
	require.NoError(t, l.SetConfig(ctx, "key1", cfg))
	got, err := l.Config(ctx, "key1")
	require.NoError(t, err)
	require.Equal(t, cfg, got)
	h, err := e.Client.HGetAll(ctx, e.NS.Prefix+"ratelimit:config:{key1}").Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"per_minute": "120", "per_hour": "5", "burst": "20"}, h, "seed 001 field names")

	// Burst 20 now admits a cost the default burst of 10 refuses.
	r, err = l.AllowN(ctx, "key1", 4)
	require.NoError(t, err)
	require.True(t, r.Allowed)
	require.Equal(t, 1, r.Rule, "per_hour = 5 binds")
	require.Equal(t, 5, r.Limit)
	require.Equal(t, 1, r.Remaining)
	r, err = l.AllowN(ctx, "key1", 2)
	require.NoError(t, err)
	require.False(t, r.Allowed)
	r, err = l.AllowN(ctx, "key1", 6)
	require.NoError(t, err)
	require.False(t, r.Allowed)
	require.Equal(t, ratelimit.Never, r.RetryAfter, "above the configured per_hour: no wait admits it")

	// Zero fields are removed; all zero deletes.
	require.NoError(t, l.SetConfig(ctx, "key1", ratelimit.Config{PerDay: 7}))
	got, err = l.Config(ctx, "key1")
	require.NoError(t, err)
	require.Equal(t, ratelimit.Config{PerDay: 7}, got)
	require.NoError(t, l.SetConfig(ctx, "key1", ratelimit.Config{}))
	n, err := e.Client.Exists(ctx, e.NS.Prefix+"ratelimit:config:{key1}").Result()
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, l.SetConfig(ctx, "key1", cfg))
	require.NoError(t, l.DeleteConfig(ctx, "key1"))
	got, err = l.Config(ctx, "key1")
	require.NoError(t, err)
	require.Equal(t, ratelimit.Config{}, got)

	// Config keys are the only keys without a TTL.
	require.NoError(t, l.SetConfig(ctx, "key2", cfg))
	_, err = l.Allow(ctx, "key2")
	require.NoError(t, err)
	e.RequireTTLs(func(k string) bool { return strings.Contains(k, "ratelimit:config:") })
}

func TestCorruptValuesNameTheKey(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	cases := []struct {
		a     ratelimit.Algorithm
		key   string
		write func(k string) error
	}{
		{ratelimit.FixedWindow, "ratelimit:api:{c}:minute", func(k string) error { return e.Client.Set(ctx, k, "abc", time.Minute).Err() }},
		{ratelimit.FixedWindow, "ratelimit:api:{c}:minute", func(k string) error { return e.Client.HSet(ctx, k, "a", "b").Err() }},
		{ratelimit.Sliding, "sliding_limit:{c}:minute", func(k string) error { return e.Client.Set(ctx, k, "1", time.Minute).Err() }},
		{ratelimit.SlidingCounter, "ratelimit:swc:{c}:minute", func(k string) error { return e.Client.Set(ctx, k, "1:2", time.Minute).Err() }},
		{ratelimit.GCRA, "ratelimit:gcra:{c}:minute", func(k string) error { return e.Client.Set(ctx, k, "soon", time.Minute).Err() }},
	}
	for _, c := range cases {
		t.Run(c.a.String()+" "+c.key, func(t *testing.T) {
			l := newLimiter(t, e, one(c.a, ratelimit.PerMinute(5)))
			k := e.NS.Prefix + c.key
			require.NoError(t, c.write(k))
			defer e.Client.Del(ctx, k)
			for _, f := range []func() (ratelimit.Result, error){
				func() (ratelimit.Result, error) { return l.Allow(ctx, "c") },
				func() (ratelimit.Result, error) { return l.Peek(ctx, "c") },
			} {
				_, err := f()
				require.ErrorIs(t, err, keys.ErrCorrupt)
				var ce *keys.CorruptError
				require.True(t, errors.As(err, &ce))
				require.Equal(t, k, ce.Key)
			}
		})
	}
	// In a policy too, a key of another type or format is reported, never
	// overwritten, and nothing else is written.
	t.Run("policy", func(t *testing.T) {
		l := newLimiter(t, e, ratelimit.Policy{
			{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerMinute(5)},
			{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(50)},
			{Algorithm: ratelimit.SlidingCounter, Limit: ratelimit.PerDay(500)},
		})
		for _, c := range []struct {
			key   string
			write func(k string) error
		}{
			{"ratelimit:api:{p1}:hour", func(k string) error { return e.Client.HSet(ctx, k, "a", "b").Err() }},
			{"ratelimit:gcra:{p2}:minute", func(k string) error { return e.Client.RPush(ctx, k, "x").Err() }},
			{"ratelimit:swc:{p3}:day", func(k string) error { return e.Client.Set(ctx, k, "1:2", time.Minute).Err() }},
		} {
			k := e.NS.Prefix + c.key
			id := c.key[strings.Index(c.key, "{")+1 : strings.Index(c.key, "}")]
			require.NoError(t, c.write(k))
			for _, f := range []func() (ratelimit.Result, error){
				func() (ratelimit.Result, error) { return l.Allow(ctx, id) },
				func() (ratelimit.Result, error) { return l.Peek(ctx, id) },
			} {
				_, err := f()
				var ce *keys.CorruptError
				require.True(t, errors.As(err, &ce), "%v", err)
				require.Equal(t, k, ce.Key)
			}
			require.NoError(t, e.Client.Del(ctx, k).Err())
			r, err := l.Allow(ctx, id)
			require.NoError(t, err)
			require.True(t, r.Allowed)
		}
	})
	t.Run("config", func(t *testing.T) {
		l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(5)), ratelimit.WithRuntimeConfig())
		k := e.NS.Prefix + "ratelimit:config:{c}"
		require.NoError(t, e.Client.HSet(ctx, k, "per_minute", "-4").Err())
		_, err := l.Allow(ctx, "c")
		require.ErrorIs(t, err, keys.ErrCorrupt)
		require.Contains(t, err.Error(), k)
		_, err = l.Config(ctx, "c")
		require.ErrorIs(t, err, keys.ErrCorrupt)
		require.NoError(t, e.Client.Del(ctx, k).Err())
		require.NoError(t, e.Client.Set(ctx, k, "x", time.Minute).Err())
		_, err = l.Config(ctx, "c")
		require.ErrorIs(t, err, keys.ErrCorrupt)
	})
}

// A fixed-window counter found without a TTL is repaired, never left to
// lock its identifier out forever.
func TestFixedWindowRepairsMissingTTL(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(2)))
	k := e.NS.Prefix + "ratelimit:api:{r}:minute"
	require.NoError(t, e.Client.Set(ctx, k, "9", 0).Err())
	r, err := l.Allow(ctx, "r")
	require.NoError(t, err)
	require.False(t, r.Allowed)
	require.Equal(t, time.Minute, r.RetryAfter)
	ttl, err := e.Client.PTTL(ctx, k).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Second)
}

func TestKeyLayouts(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	all := ratelimit.Policy{
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(5)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.Limit{Rate: 5, Period: 15 * time.Minute}},
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(5)},
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerHour(9)},
		{Algorithm: ratelimit.SlidingCounter, Limit: ratelimit.PerHour(5)},
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerSecond(5)},
	}
	cases := map[string]struct {
		opts []ratelimit.Option
		want []string
	}{
		"api": {nil, []string{"ratelimit:api:{1.2.3.4}:minute", "ratelimit:api:{1.2.3.4}:15m", "sliding_limit:{1.2.3.4}:hour",
			"ratelimit:swc:{1.2.3.4}:hour", "ratelimit:gcra:{1.2.3.4}:second"}},
		"endpoint": {[]ratelimit.Option{ratelimit.WithEndpoint("POST /login")}, []string{"ratelimit:ip:{1.2.3.4}:POST /login:minute",
			"ratelimit:ip:{1.2.3.4}:POST /login:15m", "ratelimit:sliding:{1.2.3.4}:POST /login:hour",
			"ratelimit:swc:{1.2.3.4}:POST /login:hour", "ratelimit:gcra:{1.2.3.4}:POST /login:second"}},
		"rate_limit": {[]ratelimit.Option{ratelimit.WithRateLimitKey()}, []string{"rate_limit:{1.2.3.4}"}},
		"seed":       {[]ratelimit.Option{ratelimit.WithWindowlessLogKey()}, []string{"sliding_limit:{1.2.3.4}"}},
		"seed endpoint": {[]ratelimit.Option{ratelimit.WithWindowlessLogKey(), ratelimit.WithEndpoint("POST /login")},
			[]string{"ratelimit:sliding:{1.2.3.4}:POST /login"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLimiter(t, e, all, c.opts...)
			r, err := l.Allow(ctx, "1.2.3.4")
			require.NoError(t, err)
			require.True(t, r.Allowed)
			got := e.Keys()
			var full []string
			for _, k := range c.want {
				full = append(full, e.NS.Prefix+k)
			}
			require.Subset(t, got, full)
			require.True(t, keys.SameSlot(got...), "one slot: %v", got)
			e.RequireTTLs(nil)
			require.NoError(t, l.Reset(ctx, "1.2.3.4"))
			require.Empty(t, e.Keys(), "Reset removes every key")
		})
	}
	// IPv6 addresses keep their ':' out of the separators.
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(5)), ratelimit.WithEndpoint("/"))
	_, err := l.Allow(ctx, "2001:db8::1")
	require.NoError(t, err)
	require.Equal(t, []string{e.NS.Prefix + "ratelimit:ip:{2001%3Adb8%3A%3A1}:/:minute"}, e.Keys())
}

func TestNoHashTagsGivesSeedKeys(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Cluster {
		t.Skip("keys without hash tags span slots; standalone only")
	}
	ctx := e.Ctx()
	ns := e.NS
	ns.NoHashTags = true
	l, err := ratelimit.New(e.Client, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(60)}}, ratelimit.WithNamespace(ns))
	require.NoError(t, err)
	_, err = l.Allow(ctx, "key-1")
	require.NoError(t, err)
	require.Contains(t, e.Keys(), e.NS.Prefix+"ratelimit:api:key-1:minute")
}

func TestRedisErrorsAreReturned(t *testing.T) {
	e := harness.New(t)
	c, p := e.ProxyClient(&redis.Options{MaxRetries: -1, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	l, err := ratelimit.New(c, one(ratelimit.GCRA, ratelimit.PerSecond(5)), ratelimit.WithNamespace(e.NS))
	require.NoError(t, err)
	ctx := e.Ctx()
	_, err = l.Allow(ctx, "f")
	require.NoError(t, err)
	p.CutNow()
	p.CutAfter(10)
	_, err = l.Allow(ctx, "f")
	require.Error(t, err)
	p.CutAfter(-1)
	p.Stall()
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = l.Allow(sctx, "f")
	require.Error(t, err)
	p.Resume()
	_, err = l.Allow(ctx, "f")
	require.NoError(t, err)
}
