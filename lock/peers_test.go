package lock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// What a user switching from redislock or redsync relies on (issue 33;
// docs/lock.md, "Coming from redislock or redsync").

// A wait whose context has no deadline ends by itself once the lease it
// asks for (its ttl) has passed, as redislock's Obtain does: with
// ErrNotObtained, and no context error since the context did not end it.
// Every waiting call: Acquire (plain and fair), AcquireMulti, RWMutex's
// Lock and RLock, Semaphore's Acquire and AcquireN.
func TestWaitWithoutDeadlineEndsAfterTTL(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	const ttl = 150 * time.Millisecond
	retry := WithRetry(LinearBackoff(5 * time.Millisecond))

	// Holders that stay for the whole test.
	_, err := c.TryAcquire(ctx, "doc", "busy", 30*time.Second)
	require.NoError(t, err)
	wm, err := c.RWMutex("doc", "written")
	require.NoError(t, err)
	_, err = wm.TryLock(ctx, 30*time.Second)
	require.NoError(t, err)
	rm, err := c.RWMutex("doc", "read")
	require.NoError(t, err)
	_, err = rm.TryRLock(ctx, 30*time.Second)
	require.NoError(t, err)
	sem, err := c.Semaphore("doc", "sem", 2)
	require.NoError(t, err)
	_, err = sem.TryAcquire(ctx, 30*time.Second)
	require.NoError(t, err)
	_, err = sem.TryAcquire(ctx, 30*time.Second)
	require.NoError(t, err)

	for name, wait := range map[string]func(context.Context) error{
		"acquire": func(ctx context.Context) error {
			_, err := c.Acquire(ctx, "doc", "busy", ttl, retry)
			return err
		},
		"default retry": func(ctx context.Context) error {
			_, err := c.Acquire(ctx, "doc", "busy", ttl)
			return err
		},
		"fair": func(ctx context.Context) error {
			_, err := c.Acquire(ctx, "doc", "busy", ttl, retry, WithFairness(0))
			return err
		},
		"multi": func(ctx context.Context) error {
			_, err := c.AcquireMulti(ctx, []Resource{{"doc", "free"}, {"doc", "busy"}}, ttl, retry)
			return err
		},
		"rw lock": func(ctx context.Context) error {
			_, err := rm.Lock(ctx, ttl, retry)
			return err
		},
		"rw rlock": func(ctx context.Context) error {
			_, err := wm.RLock(ctx, ttl, retry)
			return err
		},
		"semaphore": func(ctx context.Context) error {
			_, err := sem.Acquire(ctx, ttl, retry)
			return err
		},
		"semaphore n": func(ctx context.Context) error {
			_, err := sem.AcquireN(ctx, 2, ttl, retry)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			// no deadline; cancelled only when the test ends, so that a
			// wait that never ends does not outlive it
			nd, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			done := make(chan error, 1)
			go func() { done <- wait(nd) }()
			var err error
			harness.WaitFor(t, "the wait to end by itself", func() bool {
				select {
				case err = <-done:
					return true
				default:
					return false
				}
			})
			require.ErrorIs(t, err, ErrNotObtained)
			require.NoError(t, nd.Err(), "the context did not end it")
			require.NotErrorIs(t, err, context.Canceled)
			require.NotErrorIs(t, err, context.DeadlineExceeded)
		})
	}
}

// With a deadline, the context bounds the wait, not the ttl: a wait for a
// 20 ms lease with a 400 ms deadline is ended by the deadline.
func TestWaitWithDeadlineIsBoundByIt(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	_, err := c.TryAcquire(ctx, "doc", "busy", 30*time.Second)
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	defer cancel()
	_, err = c.Acquire(short, "doc", "busy", 20*time.Millisecond, WithRetry(LinearBackoff(5*time.Millisecond)))
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the deadline ended it")
}

// Campaign waits until it leads, however long: it is not bounded by the
// lease's ttl (leader election waits its turn).
func TestCampaignWithoutDeadlineOutlastsTTL(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	const ttl = 60 * time.Millisecond
	ea, err := c.Election("cron", ttl)
	require.NoError(t, err)
	eb, err := c.Election("cron", ttl)
	require.NoError(t, err)
	la, err := ea.Campaign(ctx)
	require.NoError(t, err)
	defer func() { _ = la.Release(ctx) }()

	nd, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		l, err := eb.Campaign(nd, WithRetry(LinearBackoff(5*time.Millisecond)))
		if l != nil {
			defer func() { _ = l.Release(context.Background()) }()
		}
		done <- err
	}()
	harness.WaitFor(t, "several ttls of campaigning", func() bool { return time.Since(start) > 5*ttl })
	select {
	case err := <-done:
		t.Fatalf("Campaign gave up while A led: %v", err)
	default:
	}
	require.NoError(t, ea.Resign(ctx))
	harness.WaitFor(t, "B to lead", func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	require.NoError(t, err)
}

// redislock's LinearBackoff(0) means "no retry"; here a strategy built with
// a wait of zero or less is refused where it is used, with ErrInvalid and
// nothing written, rather than polling Redis every millisecond. So is
// redislock's ExponentialBackoff max of 0 ("no cap").
func TestZeroBackoffIsInvalid(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	sem, err := c.Semaphore("doc", "s", 1)
	require.NoError(t, err)
	rw, err := c.RWMutex("doc", "rw")
	require.NoError(t, err)
	for name, s := range map[string]RetryStrategy{
		"linear 0":         LinearBackoff(0),
		"linear negative":  LinearBackoff(-time.Second),
		"limited linear 0": LimitRetry(LinearBackoff(0), 3),
		"exponential hi 0": ExponentialBackoff(16*time.Millisecond, 0),
		"limited nil":      LimitRetry(nil, 3),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Acquire(ctx, "doc", "x", time.Second, WithRetry(s))
			require.ErrorIs(t, err, ErrInvalid)
			_, err = c.TryAcquire(ctx, "doc", "x", time.Second, WithRetry(s))
			require.ErrorIs(t, err, ErrInvalid, "TryAcquire ignores the strategy, but not bad input")
			_, err = c.AcquireMulti(ctx, []Resource{{"doc", "x"}}, time.Second, WithRetry(s))
			require.ErrorIs(t, err, ErrInvalid)
			_, err = sem.Acquire(ctx, time.Second, WithRetry(s))
			require.ErrorIs(t, err, ErrInvalid)
			_, err = rw.Lock(ctx, time.Second, WithRetry(s))
			require.ErrorIs(t, err, ErrInvalid)
			require.Empty(t, e.Keys())
		})
	}
	// A positive wait below 1 ms is raised to 1 ms, as before.
	require.Equal(t, time.Millisecond, LinearBackoff(time.Microsecond).Backoff(0))
}

// TTL of a lease that is gone is ErrNotHeld, not redislock's (0, nil):
// as Refresh and Release say, whichever way it went (expired, released,
// taken over).
func TestTTLOfLostLeaseIsNotHeld(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	l, err := c.TryAcquire(ctx, "doc", "t", time.Second)
	require.NoError(t, err)
	d, err := l.TTL(ctx)
	require.NoError(t, err)
	require.Positive(t, d)
	e.Advance(1100 * time.Millisecond)
	_, err = l.TTL(ctx)
	require.ErrorIs(t, err, ErrNotHeld, "expired")
	l2, err := c.TryAcquire(ctx, "doc", "t", time.Second)
	require.NoError(t, err)
	_, err = l.TTL(ctx)
	require.ErrorIs(t, err, ErrNotHeld, "taken over")
	require.NoError(t, l2.Release(ctx))
	_, err = l2.TTL(ctx)
	require.ErrorIs(t, err, ErrNotHeld, "released")
}
