package ratelimit_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/ratelimit"
)

// hammer runs g goroutines that each call f n times and counts admissions.
func hammer(t *testing.T, g, n int, f func(i int) (ratelimit.Result, error)) int64 {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				r, err := f(w*n + i)
				if err != nil {
					errs <- err
					return
				}
				if r.Allowed {
					admitted.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return admitted.Load()
}

// pipelining is the two ways a Limiter sends checks: shared pipelines
// (the default) and one round trip each.
var pipelining = []struct {
	name string
	opt  ratelimit.Option
}{
	{"autopipelined", ratelimit.WithPipelining(4)},
	{"unpipelined", ratelimit.WithPipelining(0)},
}

// countedLimiter builds a limiter on a client of the test's own that counts
// round trips.
func countedLimiter(t *testing.T, e *harness.Env, p ratelimit.Policy, opts ...ratelimit.Option) (*ratelimit.Limiter, *harness.Trips) {
	t.Helper()
	startClock(e)
	c := e.FreshClient()
	trips := harness.CountTrips(c)
	l, err := ratelimit.New(c, p, append([]ratelimit.Option{ratelimit.WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return l, trips
}

// requireShared checks, on a real backend, that calls concurrent checks
// made went out in fewer round trips than calls: the invariants above were
// then proven through shared pipelines.
func requireShared(t *testing.T, e *harness.Env, mode string, trips *harness.Trips, calls int) {
	t.Helper()
	t.Logf("%s: %d checks in %d round trips (%d pipelines)", mode, calls, trips.Total(), trips.Pipelines())
	switch {
	case mode == "unpipelined":
		require.Zero(t, trips.Pipelines())
	case e.Real():
		require.Positive(t, trips.Pipelines())
		require.Less(t, trips.Total(), int64(calls))
	}
}

// 200 goroutines on one identifier admit exactly the limit, with every
// algorithm (SlidingCounter and GCRA per hour, so that no bucket boundary
// and no refill falls inside the test; GCRA at 144 per hour, an emission
// interval of exactly 25 s: stored arrival times round up to whole µs, so
// with another rate a frozen clock admits one fewer than the burst).
func TestConcurrentExactLimit(t *testing.T) {
	for _, c := range []struct {
		a   ratelimit.Algorithm
		lim ratelimit.Limit
	}{
		{ratelimit.FixedWindow, ratelimit.PerMinute(137)},
		{ratelimit.Sliding, ratelimit.PerMinute(137)},
		{ratelimit.SlidingCounter, ratelimit.PerHour(137)},
		{ratelimit.GCRA, ratelimit.PerHour(144)},
	} {
		a := c.a
		for _, m := range pipelining {
			t.Run(a.String()+"/"+m.name, func(t *testing.T) {
				e := harness.New(t)
				ctx := e.Ctx()
				l, trips := countedLimiter(t, e, one(a, c.lim), m.opt)
				got := hammer(t, 200, 3, func(int) (ratelimit.Result, error) { return l.Allow(ctx, "hot") })
				require.EqualValues(t, c.lim.Rate, got)
				requireShared(t, e, m.name, trips, 600)
				r, err := l.Peek(ctx, "hot")
				require.NoError(t, err)
				require.Equal(t, 0, r.Remaining)
			})
		}
	}
}

// GCRA never admits more than burst + rate × elapsed.
func TestConcurrentGCRABound(t *testing.T) {
	for _, m := range pipelining {
		t.Run(m.name, func(t *testing.T) { testConcurrentGCRABound(t, m.name, m.opt) })
	}
}

func testConcurrentGCRABound(t *testing.T, mode string, opt ratelimit.Option) {
	e := harness.New(t)
	ctx := e.Ctx()
	lim := ratelimit.Limit{Rate: 50, Period: time.Second, Burst: 20}
	l, trips := countedLimiter(t, e, one(ratelimit.GCRA, lim), opt)
	var calls atomic.Int64
	start := e.Now()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(700 * time.Millisecond)
	var failed atomic.Value
	for w := 0; w < 200; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				r, err := l.Allow(ctx, "hot")
				calls.Add(1)
				if err != nil {
					failed.Store(err)
					return
				}
				if r.Allowed {
					admitted.Add(1)
				}
				if !e.Real() {
					return // miniredis: time stands still
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	elapsed := e.Now().Sub(start)
	bound := int64(lim.Burst) + int64(float64(lim.Rate)*elapsed.Seconds()/lim.Period.Seconds())
	got := admitted.Load()
	t.Logf("admitted %d in %v, bound %d", got, elapsed, bound)
	require.LessOrEqual(t, got, bound)
	require.GreaterOrEqual(t, got, int64(lim.Burst), "the burst is always admitted")
	requireShared(t, e, mode, trips, int(calls.Load()))
}

// A multi-limit policy never over-consumes any of its limits, with mixed
// costs and every algorithm in one script.
func TestConcurrentPolicy(t *testing.T) {
	for _, m := range pipelining {
		t.Run(m.name, func(t *testing.T) { testConcurrentPolicy(t, m.name, m.opt) })
	}
}

func testConcurrentPolicy(t *testing.T, mode string, opt ratelimit.Option) {
	e := harness.New(t)
	ctx := e.Ctx()
	p := ratelimit.Policy{
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(90)},
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(80)},
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 1, Period: time.Minute, Burst: 85}},
		{Algorithm: ratelimit.SlidingCounter, Limit: ratelimit.PerHour(1000)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(75)},
	}
	l, trips := countedLimiter(t, e, p, opt)
	var units atomic.Int64
	hammer(t, 200, 3, func(i int) (ratelimit.Result, error) {
		cost := 1 + i%3
		r, err := l.AllowN(ctx, "hot", cost)
		if err == nil && r.Allowed {
			units.Add(int64(cost))
		}
		return r, err
	})
	requireShared(t, e, mode, trips, 600)
	got := units.Load()
	require.LessOrEqual(t, got, int64(75))
	require.GreaterOrEqual(t, got, int64(73), "only a cost that no longer fits is refused")
	// Every rule counted exactly the admitted units.
	v, err := e.Client.Get(ctx, e.NS.Prefix+"ratelimit:api:{hot}:minute").Int64()
	require.NoError(t, err)
	require.Equal(t, got, v)
	v, err = e.Client.Get(ctx, e.NS.Prefix+"ratelimit:api:{hot}:day").Int64()
	require.NoError(t, err)
	require.Equal(t, got, v)
	n, err := e.Client.ZCard(ctx, e.NS.Prefix+"sliding_limit:{hot}:minute").Result()
	require.NoError(t, err)
	require.Equal(t, got, n)
	e.RequireTTLs(nil)
}
