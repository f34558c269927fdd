package ratelimit_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/ratelimit"
)

var algorithms = []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.Sliding, ratelimit.SlidingCounter, ratelimit.GCRA}

// ticking moves the miniredis clock by step every millisecond until the
// test ends, so that waits end; on a real backend time moves by itself.
func ticking(t *testing.T, e *harness.Env, step time.Duration) {
	if e.Mini == nil {
		return
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				e.Advance(step)
			}
		}
	}()
	t.Cleanup(func() { close(done); wg.Wait() })
}

func TestOptionsOfItem13Validated(t *testing.T) {
	e := harness.New(t)
	p := one(ratelimit.GCRA, ratelimit.PerSecond(5))
	for name, opts := range map[string][]ratelimit.Option{
		"zero refusals":       {ratelimit.WithAutoBlock(0, time.Minute, time.Minute)},
		"zero window":         {ratelimit.WithAutoBlock(3, 0, time.Minute)},
		"sub-ms block":        {ratelimit.WithAutoBlock(3, time.Minute, time.Microsecond)},
		"block above max":     {ratelimit.WithAutoBlock(3, time.Minute, 366*24*time.Hour+time.Hour)},
		"auto without blocks": {ratelimit.WithAutoBlock(3, time.Minute, time.Minute), ratelimit.WithoutBlocks()},
		"auto in shadow":      {ratelimit.WithAutoBlock(3, time.Minute, time.Minute), ratelimit.WithShadow()},
	} {
		_, err := ratelimit.New(e.Client, p, opts...)
		require.ErrorIs(t, err, ratelimit.ErrInvalid, name)
	}
}

// Refund gives units back and Penalize takes more, in every algorithm.
func TestRefundPenalize(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			l := newLimiter(t, e, one(a, ratelimit.PerHour(3)))
			res, err := l.AllowN(ctx, "u", 3)
			require.NoError(t, err)
			require.True(t, res.Allowed)
			res, err = l.Allow(ctx, "u")
			require.NoError(t, err)
			require.False(t, res.Allowed)

			require.NoError(t, l.Refund(ctx, "u", 1))
			res, err = l.Allow(ctx, "u")
			require.NoError(t, err)
			require.True(t, res.Allowed, "the refunded unit is usable")
			res, err = l.Allow(ctx, "u")
			require.NoError(t, err)
			require.False(t, res.Allowed, "and only it")

			require.NoError(t, l.Refund(ctx, "u", 3))
			require.NoError(t, l.Refund(ctx, "u", 3), "a refund never goes below empty")
			res, err = l.Peek(ctx, "u")
			require.NoError(t, err)
			require.Equal(t, 3, res.Remaining)

			require.NoError(t, l.Penalize(ctx, "u", 2))
			res, err = l.Peek(ctx, "u")
			require.NoError(t, err)
			require.Equal(t, 1, res.Remaining, "a penalty counts like admitted requests")
			require.NoError(t, l.Penalize(ctx, "u", 3))
			res, err = l.Allow(ctx, "u")
			require.NoError(t, err)
			require.False(t, res.Allowed, "past the limit")
			require.Positive(t, res.RetryAfter)

			require.ErrorIs(t, l.Refund(ctx, "u", 0), ratelimit.ErrInvalid)
			require.ErrorIs(t, l.Penalize(ctx, "", 1), ratelimit.ErrInvalid)
			e.RequireTTLs(nil)
			// each call's request ID is kept past go-redis's whole retry
			// schedule (about 2 min 8 s at worst), so a late resend of a
			// Refund or Penalize is still recognised
			marks := 0
			for _, k := range e.Keys() {
				if strings.Contains(k, "ratelimit:adjust:") {
					marks++
					assert.Greater(t, e.Client.PTTL(ctx, k).Val(), 150*time.Second, k)
				}
			}
			assert.Equal(t, 5, marks, "3 refunds, 2 penalties")
		})
	}
}

// A Refund whose reply is lost and that go-redis resends refunds once.
func TestRefundResendCountsOnce(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	startClock(e)
	c, p := e.ProxyClient(&redis.Options{MaxRetries: 3})
	l, err := ratelimit.New(c, one(ratelimit.FixedWindow, ratelimit.PerHour(5)), ratelimit.WithNamespace(e.NS))
	require.NoError(t, err)
	_, err = l.AllowN(ctx, "u", 5)
	require.NoError(t, err)
	p.LoseReply("ratelimit:adjust:")
	require.NoError(t, l.Refund(ctx, "u", 2))
	require.Zero(t, p.Pending(), "the reply was lost")
	require.EqualValues(t, 1, p.Lost())
	res, err := l.Peek(ctx, "u")
	require.NoError(t, err)
	require.Equal(t, 2, res.Remaining, "refunded once, not twice")
}

// Reserve admits like AllowN; Cancel removes exactly the reservation's
// units, and nothing of a refused one.
func TestReserveCancel(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			l := newLimiter(t, e, one(a, ratelimit.PerHour(4)))
			r, err := l.Reserve(ctx, "u", 3)
			require.NoError(t, err)
			require.True(t, r.Allowed)
			require.Equal(t, 1, r.Remaining)
			refused, err := l.Reserve(ctx, "u", 2)
			require.NoError(t, err)
			require.False(t, refused.Allowed)
			require.NoError(t, refused.Cancel(ctx), "nothing to give back")
			_, err = l.Allow(ctx, "u")
			require.NoError(t, err)
			require.NoError(t, r.Cancel(ctx))
			res, err := l.Peek(ctx, "u")
			require.NoError(t, err)
			require.Equal(t, 3, res.Remaining, "the other request still counts")
		})
	}
}

// Many goroutines reserve and cancel every other reservation: the limit is
// never exceeded, and what remains counted is exactly the kept
// reservations.
func TestReserveCancelConcurrent(t *testing.T) {
	for _, a := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.Sliding} {
		t.Run(a.String(), func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			const limit = 60
			l := newLimiter(t, e, one(a, ratelimit.PerHour(limit)))
			var kept, admitted atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 40; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					for i := 0; i < 5; i++ {
						r, err := l.Reserve(ctx, "u", 1)
						if !assertNoErr(t, err) || !r.Allowed {
							continue
						}
						admitted.Add(1)
						if (g+i)%2 == 0 {
							assertNoErr(t, r.Cancel(ctx))
						} else {
							kept.Add(1)
						}
					}
				}(g)
			}
			wg.Wait()
			require.LessOrEqual(t, kept.Load(), int64(limit))
			res, err := l.Peek(ctx, "u")
			require.NoError(t, err)
			require.EqualValues(t, limit-kept.Load(), res.Remaining, "exactly the kept reservations count")
			require.Greater(t, admitted.Load(), int64(limit), "cancelled units were reused")
		})
	}
}

func assertNoErr(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// Wait returns once admitted; concurrent waiters never get more than the
// rule allows over the time they took.
func TestWait(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const rate, burst = 50, 5
	l := newLimiter(t, e, ratelimit.Policy{{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: rate, Period: time.Second, Burst: burst}}})
	ticking(t, e, 2*time.Millisecond)
	t0 := e.Now()
	var n atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				res, err := l.Wait(ctx, "u", 1)
				if assertNoErr(t, err) && res.Allowed {
					n.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	took := e.Now().Sub(t0)
	require.EqualValues(t, 60, n.Load(), "every waiter admitted")
	// GCRA admits at most burst + rate × elapsed (server time).
	require.GreaterOrEqual(t, took+time.Millisecond, time.Duration(60-burst)*time.Second/rate, "never over-admits")
}

// Wait gives up at once when ctx's deadline comes before the retry, and
// when ctx ends.
func TestWaitDeadline(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(1)))
	_, err := l.Allow(ctx, "u")
	require.NoError(t, err)
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := l.Wait(dctx, "u", 1)
	require.ErrorIs(t, err, ratelimit.ErrLimited)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, res.Allowed)
	require.Greater(t, res.RetryAfter, time.Minute)

	l2 := newLimiter(t, e, ratelimit.Policy{{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 1}}})
	_, err = l2.Allow(ctx, "v")
	require.NoError(t, err)
	cctx, cancel2 := context.WithCancel(context.Background()) // no deadline
	time.AfterFunc(20*time.Millisecond, cancel2)
	_, err = l2.Wait(cctx, "v", 1)
	require.ErrorIs(t, err, ratelimit.ErrLimited)
	require.ErrorIs(t, err, context.Canceled)
}

// WithAutoBlock blocks after the n-th refusal within the window, in every
// limiter of the namespace; Reset lifts it and clears the count.
func TestAutoBlock(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(1)), ratelimit.WithAutoBlock(3, time.Minute, 2*time.Hour))
	other := newLimiter(t, e, one(ratelimit.GCRA, ratelimit.PerSecond(100)))
	res, err := l.Allow(ctx, "u")
	require.NoError(t, err)
	require.True(t, res.Allowed)
	for i := 0; i < 2; i++ {
		res, err = l.Allow(ctx, "u")
		require.NoError(t, err)
		require.False(t, res.Allowed)
		require.LessOrEqual(t, res.RetryAfter, time.Hour, "refused by the rule, not blocked yet")
	}
	res, err = other.Allow(ctx, "u")
	require.NoError(t, err)
	require.True(t, res.Allowed, "not blocked before the third refusal")
	res, err = l.Allow(ctx, "u")
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Greater(t, res.RetryAfter, time.Hour+59*time.Minute, "the third refusal blocks")
	res, err = other.Allow(ctx, "u")
	require.NoError(t, err)
	require.False(t, res.Allowed, "the block holds in every limiter")
	e.RequireTTLs(nil)

	require.NoError(t, l.Reset(ctx, "u"))
	res, err = other.Allow(ctx, "u")
	require.NoError(t, err)
	require.True(t, res.Allowed)

	// refusals older than the window do not count
	_, _ = l.Allow(ctx, "w")
	_, _ = l.Allow(ctx, "w")
	_, _ = l.Allow(ctx, "w")
	if e.Mini == nil {
		return // the rest needs a minute to pass: miniredis
	}
	e.Advance(time.Minute + time.Millisecond)
	res, err = l.Allow(ctx, "w")
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.LessOrEqual(t, res.RetryAfter, time.Hour, "the count started over")
}

// Under many concurrent refused requests the block is set once and holds:
// nothing is admitted after it.
func TestAutoBlockConcurrent(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(10)), ratelimit.WithAutoBlock(20, time.Minute, time.Hour))
	n := hammer(t, 50, 10, func(int) (ratelimit.Result, error) { return l.Allow(ctx, "u") })
	require.EqualValues(t, 10, n, "never over-admits")
	ttl, err := e.Client.PTTL(ctx, e.NS.Prefix+"ratelimit:block:{u}").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute, "blocked")
	v, err := e.Client.Get(ctx, e.NS.Prefix+"ratelimit:block:{u}").Result()
	require.NoError(t, err)
	require.Equal(t, "auto", v)
}

// Shadow mode admits what the policy refuses and says so; the decision
// hook sees every decision.
func TestShadowAndHook(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	var mu sync.Mutex
	var seen []ratelimit.Result
	var errs int
	hook := func(_ context.Context, id string, cost int, res ratelimit.Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs++
			return
		}
		seen = append(seen, res)
	}
	l := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerHour(2)), ratelimit.WithShadow(), ratelimit.WithDecisionHook(hook))
	for i := 0; i < 4; i++ {
		res, err := l.Allow(ctx, "u")
		require.NoError(t, err)
		require.True(t, res.Allowed)
		require.Equal(t, i >= 2, res.Shadowed, "request %d", i)
	}
	res, err := l.Peek(ctx, "u")
	require.NoError(t, err)
	require.Zero(t, res.Remaining, "shadowed requests consume nothing")
	require.NoError(t, l.Block(ctx, "u", time.Minute))
	res, err = l.Allow(ctx, "u")
	require.NoError(t, err)
	require.True(t, res.Allowed && res.Shadowed, "a block is shadowed too")
	_, err = l.Allow(ctx, "")
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	_, err = l.Wait(ctx, "u", 1)
	require.NoError(t, err, "shadow mode never waits")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 6, "Peek is not a decision")
	require.Equal(t, 1, errs)
	require.False(t, seen[1].Shadowed)
	require.True(t, seen[2].Shadowed)
}

// Unblock lifts a block and keeps the counters: what the identifier used
// before the block still counts, unlike after Reset.
func TestUnblockKeepsCounters(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(3)))
	other := newLimiter(t, e, one(ratelimit.Sliding, ratelimit.PerMinute(100)))
	res, err := l.AllowN(ctx, "u", 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.NoError(t, l.Block(ctx, "u", 24*time.Hour))
	res, err = other.Allow(ctx, "u")
	require.NoError(t, err)
	require.False(t, res.Allowed, "blocked in every limiter of the namespace")

	lifted, err := other.Unblock(ctx, "u")
	require.NoError(t, err)
	require.True(t, lifted)
	res, err = l.Allow(ctx, "u")
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 0, res.Remaining, "the two units used before the block still count")
	res, err = l.Allow(ctx, "u")
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.LessOrEqual(t, res.RetryAfter, time.Hour, "refused by the counter, not by a day's block")

	lifted, err = l.Unblock(ctx, "u")
	require.NoError(t, err)
	require.False(t, lifted, "nothing to lift")
	_, err = l.Unblock(ctx, "")
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	e.RequireTTLs(nil)
}
