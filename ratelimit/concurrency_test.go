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

// 200 goroutines on one identifier admit exactly the limit.
func TestConcurrentExactLimit(t *testing.T) {
	for _, a := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.Sliding} {
		t.Run(a.String(), func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			l := newLimiter(t, e, one(a, ratelimit.PerMinute(137)))
			got := hammer(t, 200, 3, func(int) (ratelimit.Result, error) { return l.Allow(ctx, "hot") })
			require.EqualValues(t, 137, got)
			r, err := l.Peek(ctx, "hot")
			require.NoError(t, err)
			require.Equal(t, 0, r.Remaining)
		})
	}
}

// GCRA never admits more than burst + rate × elapsed.
func TestConcurrentGCRABound(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	lim := ratelimit.Limit{Rate: 50, Period: time.Second, Burst: 20}
	l := newLimiter(t, e, one(ratelimit.GCRA, lim))
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
}

// A multi-limit policy never over-consumes any of its limits, with mixed
// costs and every algorithm in one script.
func TestConcurrentPolicy(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	p := ratelimit.Policy{
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(90)},
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(80)},
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 1, Period: time.Minute, Burst: 85}},
		{Algorithm: ratelimit.SlidingCounter, Limit: ratelimit.PerHour(1000)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(75)},
	}
	l := newLimiter(t, e, p)
	var units atomic.Int64
	hammer(t, 200, 3, func(i int) (ratelimit.Result, error) {
		cost := 1 + i%3
		r, err := l.AllowN(ctx, "hot", cost)
		if err == nil && r.Allowed {
			units.Add(int64(cost))
		}
		return r, err
	})
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
