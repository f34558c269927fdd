package lock

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// The server clock stepping back (NTP) must not make tokens go back, while
// the fence key lives and after it expired, as long as the step is smaller
// than the fence TTL (the documented bound).
func TestFenceIncreasesWhenServerClockStepsBack(t *testing.T) {
	e := harness.New(t)
	if e.Mini == nil {
		t.Skip("needs a server clock the test can set; covered on miniredis")
	}
	c := newClient(t, e, WithMaxTTL(time.Minute), WithFenceTTL(time.Hour))
	ctx := e.Ctx()
	fk, err := fenceKey.Key(e.NS, "doc", "clock")
	require.NoError(t, err)
	var last int64
	take := func() {
		t.Helper()
		l, err := c.TryAcquire(ctx, "doc", "clock", time.Second)
		require.NoError(t, err)
		require.Greater(t, l.Fence(), last)
		last = l.Fence()
		require.NoError(t, l.Release(ctx))
	}
	take()
	e.Mini.SetTime(e.Now().Add(-10 * time.Minute)) // the fence key lives
	take()
	take()
	e.Advance(time.Hour + time.Second) // the fence key expires
	n, err := e.Client.Exists(ctx, fk).Result()
	require.NoError(t, err)
	require.Zero(t, n)
	e.Mini.SetTime(e.Now().Add(-30 * time.Minute)) // a step back below the fence TTL
	take()
}

// A fence at the limit of Lua's exact integers is corrupt, not reused: past
// it, last + 1 == last in a double.
func TestFenceAtFloatLimit(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	fk, err := fenceKey.Key(e.NS, "doc", "big")
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, fk, "9007199254740990", time.Minute).Err())
	l, err := c.TryAcquire(ctx, "doc", "big", time.Second)
	require.NoError(t, err)
	require.EqualValues(t, int64(9007199254740991), l.Fence())
	require.NoError(t, l.Release(ctx))
	for _, v := range []string{"9007199254740991", "9007199254740993", "9999999999999999"} {
		require.NoError(t, e.Client.Set(ctx, fk, v, time.Minute).Err())
		_, err = c.TryAcquire(ctx, "doc", "big", time.Second)
		require.ErrorIs(t, err, keys.ErrCorrupt, v)
		_, err = c.Acquire(ctx, "doc", "big", time.Second, WithFairness(0))
		require.ErrorIs(t, err, keys.ErrCorrupt, v)
	}
	g, err := c.Interval("big", time.Hour, time.Second)
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, g.keys[2], "9007199254740991", time.Minute).Err())
	_, err = g.Claim(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(2 * time.Second):
		t.Fatalf("%s: watchdog goroutine still running", what)
	}
}

func TestWatchdogGoroutineEnds(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	t.Run("after release", func(t *testing.T) {
		l, err := c.TryAcquire(ctx, "doc", "wd-release", time.Second, WithWatchdog(20*time.Millisecond))
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, l.Release(ctx))
		waitClosed(t, l.wdDone, "released")
		n, err := e.Client.Exists(ctx, l.Key()).Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing re-created the key after Release")
	})
	t.Run("after loss", func(t *testing.T) {
		l, err := c.TryAcquire(ctx, "doc", "wd-lost", time.Second, WithWatchdog(20*time.Millisecond))
		require.NoError(t, err)
		require.NoError(t, e.Client.Set(ctx, l.Key(), "other:1:1000", time.Second).Err())
		waitClosed(t, l.wdDone, "lost")
		require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
		v, err := e.Client.Get(ctx, l.Key()).Result()
		require.NoError(t, err)
		require.Equal(t, "other:1:1000", v, "the other owner's lease is untouched")
	})
	t.Run("semaphore permit after release", func(t *testing.T) {
		s, err := c.Semaphore("doc", "wd-sem", 2)
		require.NoError(t, err)
		p, err := s.TryAcquire(ctx, time.Second, WithWatchdog(0))
		require.NoError(t, err)
		require.NoError(t, p.Release(ctx))
		waitClosed(t, p.wdDone, "permit released")
	})
}

// A Refresh that shortens the TTL below the watchdog's period must not let
// the lease run out between two refreshes.
func TestWatchdogFollowsShorterRefresh(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	l, err := c.TryAcquire(ctx, "doc", "wd-short", 5*time.Second, WithWatchdog(2*time.Second))
	require.NoError(t, err)
	require.NoError(t, l.Refresh(ctx, 600*time.Millisecond))
	time.Sleep(1300 * time.Millisecond) // twice the new TTL, before the first 2s tick
	require.NoError(t, context.Cause(l.Context()), "the watchdog kept the shortened lease")
	ttl, err := l.TTL(ctx)
	require.NoError(t, err)
	require.Positive(t, ttl)
	require.NoError(t, l.Release(ctx))
}

func TestBadWatchdogAndKeepRejected(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e, WithMaxTTL(10*time.Second), WithFenceTTL(time.Minute))
	ctx := e.Ctx()
	_, err := c.TryAcquire(ctx, "doc", "x", time.Second, WithWatchdog(time.Second))
	require.ErrorIs(t, err, ErrInvalid, "a period not below the TTL lets the lease lapse")
	_, err = c.Acquire(ctx, "doc", "x", time.Second, WithFairness(time.Minute))
	require.ErrorIs(t, err, ErrInvalid, "keep above the max TTL")
	s, err := c.Semaphore("doc", "x", 1)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx, time.Second, WithWatchdog(2*time.Second))
	require.ErrorIs(t, err, ErrInvalid)
	require.Empty(t, e.Keys())
}

// A queue entry without a deadline (its waiter's deadline was evicted, or
// the list and set disagree) must not block the lock forever.
func TestFairEntryWithoutDeadlineDoesNotBlock(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	qk, err := queueKey.Key(e.NS, "doc", "orphan")
	require.NoError(t, err)
	require.NoError(t, e.Client.RPush(ctx, qk, "orphan-waiter").Err())
	require.NoError(t, e.Client.PExpire(ctx, qk, time.Minute).Err())
	l, err := c.TryAcquire(ctx, "doc", "orphan", time.Second, WithFairness(0))
	require.NoError(t, err)
	require.Zero(t, queueLen(t, e, "doc", "orphan"))
	require.NoError(t, l.Release(ctx))
}

var errLostReply = errors.New("test: reply lost")

// loseReplies runs commands on the server, then reports the next n
// successful runs of the acquire scripts as failed: a reply lost to a
// timeout or a cut connection. Other commands pass.
type loseReplies struct{ n atomic.Int32 }

func isAcquire(cmd redis.Cmder) bool {
	a := cmd.Args()
	if len(a) < 2 {
		return false
	}
	body, _ := a[1].(string) // EVALSHA's hash, or EVAL's whole source
	for _, s := range []struct {
		hash, src string
	}{
		{acquireOp.Script().Hash(), acquireSrc},
		{fairAcquireOp.Script().Hash(), fairAcquireSrc},
		{semAcquireOp.Script().Hash(), semAcquireSrc},
		{intervalClaimOp.Script().Hash(), intervalClaimSrc},
	} {
		if body == s.hash || strings.HasSuffix(body, s.src) {
			return true
		}
	}
	return false
}

func (h *loseReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loseReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && isAcquire(cmd) && h.n.Add(-1) >= 0 {
			cmd.SetErr(errLostReply)
			return errLostReply
		}
		return err
	}
}

// ProcessPipelineHook loses the reply of an acquisition that shares a
// pipeline with other calls (the auto-pipeline batches an acquisition with
// a give-back still in flight).
func (h *loseReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if cmd.Err() == nil && isAcquire(cmd) && h.n.Add(-1) >= 0 {
				cmd.SetErr(errLostReply)
			}
		}
		return err
	}
}

// An acquisition whose reply was lost took the lease on the server; the
// client gives it back so that it does not block the resource for its TTL.
func TestLostReplyGivesLeaseBack(t *testing.T) {
	e := harness.New(t)
	pc, _ := e.ProxyClient(nil)
	h := &loseReplies{}
	pc.AddHook(h)
	c, err := New(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	ctx := e.Ctx()
	free := func(what string, held func() bool) {
		t.Helper()
		harness.WaitFor(t, what, func() bool { return !held() })
	}

	for _, fair := range []bool{false, true} {
		var opts []AcquireOption
		if fair {
			opts = append(opts, WithFairness(0))
		}
		h.n.Store(1)
		_, err = c.TryAcquire(ctx, "doc", "lost-reply", time.Minute, opts...)
		require.ErrorIs(t, err, errLostReply)
		k, _ := lockKey.Key(e.NS, "doc", "lost-reply")
		free("lease given back", func() bool { return e.Client.Exists(ctx, k).Val() == 1 })
	}

	s, err := c.Semaphore("doc", "lost-reply", 1)
	require.NoError(t, err)
	h.n.Store(1)
	_, err = s.TryAcquire(ctx, time.Minute)
	require.ErrorIs(t, err, errLostReply)
	free("permit given back", func() bool { n, _ := s.Held(ctx); return n > 0 })
	p, err := s.TryAcquire(ctx, time.Minute)
	require.NoError(t, err)
	require.NoError(t, p.Release(ctx))

	// A claim whose reply was lost: its lease is given back, and the run
	// counts (at most once: no second run in the same interval).
	g, err := c.Interval("lost-reply", time.Hour, time.Minute)
	require.NoError(t, err)
	h.n.Store(1)
	_, err = g.Claim(ctx)
	require.ErrorIs(t, err, errLostReply)
	lk, _ := lockKey.Key(e.NS, CronResource, "lost-reply")
	free("run lease given back", func() bool { return e.Client.Exists(ctx, lk).Val() == 1 })
	run, err := g.Claim(ctx)
	require.NoError(t, err)
	require.False(t, run.Claimed)
}

// The fence key's TTL is set only now and then (see lib.lua), yet after
// every acquisition the key lives at least the fence TTL, and at most the
// fence TTL plus 1/4096 of it: over steps of server time within and across
// the windows that decide it, and through a step back of the clock.
func TestFenceKeyOutlivesEveryToken(t *testing.T) {
	e := harness.New(t)
	const fenceTTL = 2 * time.Second
	c := newClient(t, e, WithMaxTTL(time.Second), WithFenceTTL(fenceTTL))
	keep := time.Duration(fenceKeep(fenceTTL)) * time.Millisecond
	require.Greater(t, keep, fenceTTL)
	ctx := e.Ctx()
	fk, err := fenceKey.Key(e.NS, "doc", "keep")
	require.NoError(t, err)
	// slack covers the time a real server's clock moves between the
	// acquisition and the PTTL read.
	slack := time.Duration(0)
	if e.Real() {
		slack = 20 * time.Millisecond
	}
	var last int64
	for i := range 60 {
		l, err := c.TryAcquire(ctx, "doc", "keep", 100*time.Millisecond)
		require.NoError(t, err)
		require.Greater(t, l.Fence(), last)
		last = l.Fence()
		pttl, err := e.Client.PTTL(ctx, fk).Result()
		require.NoError(t, err)
		require.GreaterOrEqual(t, pttl, fenceTTL-slack, "step %d", i)
		require.LessOrEqual(t, pttl, keep, "step %d", i)
		require.NoError(t, l.Release(ctx))
		e.Advance(time.Duration(i%4+1) * 150 * time.Microsecond) // windows are ~0.5ms
		if i == 30 && e.Mini != nil {
			e.Mini.SetTime(e.Now().Add(-time.Second)) // tokens go on from last + 1
		}
	}
}

// A fence value this package did not write is reported and left exactly as
// it was, its TTL included, although the token is written before the last
// one is checked.
func TestCorruptFenceLeftAsItWas(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	fk, err := fenceKey.Key(e.NS, "doc", "foreign")
	require.NoError(t, err)
	for _, ttl := range []time.Duration{0, time.Minute} {
		require.NoError(t, e.Client.Set(ctx, fk, "12ab", ttl).Err())
		_, err = c.TryAcquire(ctx, "doc", "foreign", time.Second)
		require.ErrorIs(t, err, keys.ErrCorrupt)
		v, err := e.Client.Get(ctx, fk).Result()
		require.NoError(t, err)
		require.Equal(t, "12ab", v)
		pttl, err := e.Client.PTTL(ctx, fk).Result()
		require.NoError(t, err)
		if ttl == 0 {
			require.Equal(t, time.Duration(-1), pttl, "still without a TTL")
		} else {
			require.InDelta(t, float64(ttl), float64(pttl), float64(time.Second))
		}
		lk, _ := lockKey.Key(e.NS, "doc", "foreign")
		require.Zero(t, e.Client.Exists(ctx, lk).Val(), "no lease taken")
	}
}
