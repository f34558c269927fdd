package ratelimit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/ratelimit"
)

func newLimiter(t *testing.T, e *harness.Env, p ratelimit.Policy, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	startClock(e)
	l, err := ratelimit.New(e.Client, p, append([]ratelimit.Option{ratelimit.WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return l
}

func one(a ratelimit.Algorithm, l ratelimit.Limit) ratelimit.Policy {
	return ratelimit.Policy{{Algorithm: a, Limit: l}}
}

// clock tracks, per test environment, the server time at the test's start
// and the time the test meant to let pass (advance), so that on a real
// server, where advance sleeps and a loaded machine oversleeps, the tests
// know how late they are (see late).
type clock struct {
	t0  time.Time
	adv time.Duration
}

var (
	clocksMu sync.Mutex
	clocks   = map[*harness.Env]*clock{}
)

// startClock records the server time when a test builds its first limiter.
func startClock(e *harness.Env) {
	clocksMu.Lock()
	_, ok := clocks[e]
	clocksMu.Unlock()
	if ok {
		return
	}
	c := &clock{t0: e.Now()}
	clocksMu.Lock()
	clocks[e] = c
	clocksMu.Unlock()
	e.T.Cleanup(func() {
		clocksMu.Lock()
		delete(clocks, e)
		clocksMu.Unlock()
	})
}

// advance is e.Advance, remembered by late.
func advance(e *harness.Env, d time.Duration) {
	e.T.Helper()
	startClock(e)
	e.Advance(d)
	clocksMu.Lock()
	clocks[e].adv += d
	clocksMu.Unlock()
}

// late is how much more server time has passed since the test started
// than it advanced: zero on miniredis; on a real server the time spent in
// calls plus any oversleep.
func late(e *harness.Env) time.Duration {
	if !e.Real() {
		return 0
	}
	clocksMu.Lock()
	c := clocks[e]
	clocksMu.Unlock()
	if c == nil {
		return 0
	}
	return e.Now().Sub(c.t0) - c.adv
}

// maxLate is how late a real-server test may run and still assert exact
// decisions: the time-based tests keep every decision at least this far
// from its boundary.
const maxLate = 60 * time.Millisecond

// want checks a result to the millisecond.
func want(t *testing.T, r ratelimit.Result, allowed bool, limit, remaining int, retry, reset time.Duration) {
	t.Helper()
	require.Equal(t, allowed, r.Allowed, "allowed (%+v)", r)
	require.Equal(t, limit, r.Limit, "limit (%+v)", r)
	require.Equal(t, remaining, r.Remaining, "remaining (%+v)", r)
	require.InDelta(t, retry.Milliseconds(), r.RetryAfter.Milliseconds(), 1, "retry after (%+v)", r)
	require.InDelta(t, reset.Milliseconds(), r.ResetAfter.Milliseconds(), 1, "reset after (%+v)", r)
}

// exact is want on miniredis, where time stands still between calls. On a
// real server, time runs on between calls and sleeps overshoot under load:
// the server time elapsed is measured (late), and if the test is so late
// that a decision could legitimately differ, the rest of the test is
// skipped (miniredis covers it exactly) rather than failing on timing;
// otherwise decisions and counts must match and durations be within the
// measured lateness plus 20ms (the time of this call).
func exact(t *testing.T, e *harness.Env, r ratelimit.Result, allowed bool, limit, remaining int, retry, reset time.Duration) {
	t.Helper()
	if !e.Real() {
		want(t, r, allowed, limit, remaining, retry, reset)
		return
	}
	lt := late(e)
	if lt > maxLate {
		t.Skipf("real server ran %v late (loaded machine); the exact timeline is covered on miniredis", lt)
	}
	tol := float64((lt + 20*time.Millisecond).Milliseconds())
	require.Equal(t, allowed, r.Allowed, "allowed (%+v, %v late)", r, lt)
	require.Equal(t, limit, r.Limit, "limit (%+v)", r)
	require.Equal(t, remaining, r.Remaining, "remaining (%+v, %v late)", r, lt)
	require.InDelta(t, retry.Milliseconds(), r.RetryAfter.Milliseconds(), tol, "retry after (%+v, %v late)", r, lt)
	require.InDelta(t, reset.Milliseconds(), r.ResetAfter.Milliseconds(), tol, "reset after (%+v, %v late)", r, lt)
}

func TestFixedWindow(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(2 * time.Second)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerSecond(3)))
	for i := 2; i >= 0; i-- {
		r, err := l.Allow(ctx, "u1")
		require.NoError(t, err)
		exact(t, e, r, true, 3, i, 0, time.Second)
	}
	r, err := l.Allow(ctx, "u1")
	require.NoError(t, err)
	exact(t, e, r, false, 3, 0, time.Second, time.Second)

	advance(e, 400*time.Millisecond)
	r, err = l.Allow(ctx, "u1")
	require.NoError(t, err)
	exact(t, e, r, false, 3, 0, 600*time.Millisecond, 600*time.Millisecond)

	advance(e, 600*time.Millisecond)
	r, err = l.Allow(ctx, "u1")
	require.NoError(t, err)
	exact(t, e, r, true, 3, 2, 0, time.Second)
}

func TestSlidingLog(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(2 * time.Second)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerSecond(3)))
	step := func(d time.Duration, allowed bool, remaining int, retry, reset time.Duration) {
		t.Helper()
		if d > 0 {
			advance(e, d)
		}
		r, err := l.Allow(ctx, "u1")
		require.NoError(t, err)
		exact(t, e, r, allowed, 3, remaining, retry, reset)
	}
	step(0, true, 2, 0, time.Second)                                                 // t=0
	step(300*time.Millisecond, true, 1, 0, time.Second)                              // t=300
	step(300*time.Millisecond, true, 0, 0, time.Second)                              // t=600
	step(100*time.Millisecond, false, 0, 300*time.Millisecond, 900*time.Millisecond) // t=700: wait for t=0 to leave
	step(300*time.Millisecond, true, 0, 0, time.Second)                              // t=1000: the t=0 entry is out
	step(0, false, 0, 300*time.Millisecond, time.Second)                             // t=1000: next out is t=300
}

func TestSlidingLogMembersUniqueInOneMillisecond(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerMinute(100)))
	for i := 0; i < 5; i++ { // miniredis: the clock stands still
		r, err := l.Allow(ctx, "u1")
		require.NoError(t, err)
		require.True(t, r.Allowed)
	}
	r, err := l.AllowN(ctx, "u1", 10)
	require.NoError(t, err)
	require.True(t, r.Allowed)
	require.Equal(t, 85, r.Remaining)
	k := e.NS.Prefix + "sliding_limit:{u1}:minute"
	n, err := e.Client.ZCard(ctx, k).Result()
	require.NoError(t, err)
	require.EqualValues(t, 15, n)
}

func TestSlidingCounter(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(3 * time.Second)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.SlidingCounter, ratelimit.PerSecond(10)))
	// Buckets are aligned to whole periods of server time: start at one.
	now := e.Now()
	advance(e, time.Second-time.Duration(now.UnixNano())%time.Second)
	r, err := l.AllowN(ctx, "u1", 10)
	require.NoError(t, err)
	exact(t, e, r, true, 10, 0, 0, 2*time.Second)
	r, err = l.Allow(ctx, "u1")
	require.NoError(t, err)
	// Refused until 10% into the next bucket, when the previous bucket
	// weighs 0.9 × 10 = 9.
	exact(t, e, r, false, 10, 0, 1100*time.Millisecond, 2*time.Second)
	advance(e, 1100*time.Millisecond)
	r, err = l.Allow(ctx, "u1")
	require.NoError(t, err)
	exact(t, e, r, true, 10, 0, 0, 1900*time.Millisecond)
	r, err = l.Allow(ctx, "u1")
	require.NoError(t, err)
	// 9 + 1 = 10 used: the next fits when the previous weighs 8, at 20%.
	exact(t, e, r, false, 10, 0, 100*time.Millisecond, 1900*time.Millisecond)
}

func TestGCRA(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(time.Second)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.GCRA, ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 5}))
	for i := 4; i >= 0; i-- {
		r, err := l.Allow(ctx, "u1")
		require.NoError(t, err)
		exact(t, e, r, true, 5, i, 0, time.Duration(5-i)*100*time.Millisecond)
	}
	r, err := l.Allow(ctx, "u1")
	require.NoError(t, err)
	exact(t, e, r, false, 5, 0, 100*time.Millisecond, 500*time.Millisecond)
	advance(e, 100*time.Millisecond)
	r, err = l.Allow(ctx, "u1")
	require.NoError(t, err)
	exact(t, e, r, true, 5, 0, 0, 500*time.Millisecond)
	advance(e, 500*time.Millisecond)
	r, err = l.Peek(ctx, "u1")
	require.NoError(t, err)
	exact(t, e, r, true, 5, 5, 0, 0)
	r, err = l.AllowN(ctx, "u1", 5)
	require.NoError(t, err)
	exact(t, e, r, true, 5, 0, 0, 500*time.Millisecond)
	r, err = l.AllowN(ctx, "u1", 3)
	require.NoError(t, err)
	exact(t, e, r, false, 5, 0, 300*time.Millisecond, 500*time.Millisecond)
}

// Burst zero means Rate, as PerSecond and friends leave it.
func TestGCRADefaultBurst(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.GCRA, ratelimit.PerMinute(60)))
	r, err := l.AllowN(ctx, "u1", 60)
	require.NoError(t, err)
	exact(t, e, r, true, 60, 0, 0, time.Minute)
	r, err = l.Allow(ctx, "u1")
	require.NoError(t, err)
	exact(t, e, r, false, 60, 0, time.Second, time.Minute)
}

func TestWindowsRollLong(t *testing.T) {
	// Minute, hour and day windows on miniredis's clock.
	e := harness.New(t)
	e.RequireShortWaits(49 * time.Hour)
	ctx := e.Ctx()
	for _, a := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.Sliding, ratelimit.SlidingCounter, ratelimit.GCRA} {
		t.Run(a.String(), func(t *testing.T) {
			l := newLimiter(t, e, ratelimit.Policy{
				{Algorithm: a, Limit: ratelimit.PerMinute(2)},
				{Algorithm: a, Limit: ratelimit.PerDay(3)},
			})
			id := "roll-" + a.String()
			n := 0
			for i := 0; i < 4; i++ {
				r, err := l.Allow(ctx, id)
				require.NoError(t, err)
				if r.Allowed {
					n++
				}
			}
			require.Equal(t, 2, n, "minute limit")
			e.Advance(2 * time.Minute)
			r, err := l.Allow(ctx, id)
			require.NoError(t, err)
			require.True(t, r.Allowed)
			r, err = l.Allow(ctx, id)
			require.NoError(t, err)
			require.False(t, r.Allowed, "day limit")
			require.Equal(t, 1, r.Rule, "the day rule binds")
			require.Greater(t, r.RetryAfter, 7*time.Hour) // GCRA: one per 8h; others: the day
			// Two days: a sliding window counter still weighs the previous
			// day's count for part of the next one, so one day and an hour
			// is not enough when the requests came early in their day
			// (which depends on the clock the test starts at).
			e.Advance(48 * time.Hour)
			r, err = l.Allow(ctx, id)
			require.NoError(t, err)
			require.True(t, r.Allowed)
		})
	}
}

// A one-rule limiter runs a lean script per algorithm for Allow and AllowN;
// the same rule with WithRuntimeConfig (and no config stored) runs the
// general allow.lua. Both must decide and report the same.
func TestSingleRuleScriptsMatchGeneral(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for _, a := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.Sliding, ratelimit.SlidingCounter, ratelimit.GCRA} {
		t.Run(a.String(), func(t *testing.T) {
			lim := ratelimit.PerHour(5)
			if a == ratelimit.GCRA {
				lim.Burst = 4
			}
			lean := newLimiter(t, e, one(a, lim))
			general := newLimiter(t, e, one(a, lim), ratelimit.WithRuntimeConfig())
			idL, idG := "lean-"+a.String(), "general-"+a.String()
			var maxGap time.Duration
			step := func(cost int) {
				t.Helper()
				start := time.Now()
				rl, err := lean.AllowN(ctx, idL, cost)
				require.NoError(t, err)
				rg, err := general.AllowN(ctx, idG, cost)
				require.NoError(t, err)
				// on a real server the two calls are this far apart, and
				// state written by earlier pairs up to maxGap
				gap := time.Since(start)
				maxGap = max(maxGap, gap)
				tol := float64((gap + maxGap + 20*time.Millisecond).Milliseconds())
				if !e.Real() {
					require.Equal(t, rg, rl, "cost %d", cost)
					return
				}
				require.Equal(t, rg.Allowed, rl.Allowed, "cost %d: %+v vs %+v", cost, rl, rg)
				require.Equal(t, rg.Limit, rl.Limit)
				require.InDelta(t, rg.RetryAfter.Milliseconds(), rl.RetryAfter.Milliseconds(), tol)
				require.InDelta(t, rg.ResetAfter.Milliseconds(), rl.ResetAfter.Milliseconds(), tol)
			}
			for _, c := range []int{1, 2, 1, 1, 1, 3, 1} {
				step(c)
			}
			if e.Mini != nil {
				for _, d := range []time.Duration{20 * time.Minute, 41 * time.Minute, 30 * time.Minute} {
					e.Advance(d)
					for _, c := range []int{2, 1, 3, 1} {
						step(c)
					}
				}
				// refunded to empty within a window: the window keeps
				// its end (a counter at 0 still has its TTL)
				e.Advance(10 * time.Minute)
				for range 2 { // refunds never go below empty
					require.NoError(t, lean.Refund(ctx, idL, 4))
					require.NoError(t, general.Refund(ctx, idG, 4))
				}
				step(1)
				step(2)
			}
			require.NoError(t, lean.Block(ctx, idL, time.Minute))
			require.NoError(t, general.Block(ctx, idG, time.Minute))
			step(1)
		})
	}
	e.RequireTTLs(nil)
}
