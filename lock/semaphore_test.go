package lock

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

func TestSemaphoreLimitUnderContention(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	s, err := c.Semaphore("gpu", "pool-1", 3)
	require.NoError(t, err)
	require.Equal(t, 3, s.Limit())
	var in, peak, total atomic.Int32
	var wg sync.WaitGroup
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := s.Acquire(ctx, 5*time.Second, WithRetry(LinearBackoff(2*time.Millisecond)))
			if err != nil {
				t.Error(err)
				return
			}
			n := in.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			in.Add(-1)
			total.Add(1)
			if err := p.Release(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 60, total.Load())
	require.LessOrEqual(t, peak.Load(), int32(3))
	require.Positive(t, peak.Load())
	held, err := s.Held(ctx)
	require.NoError(t, err)
	require.Zero(t, held)
}

func TestSemaphorePermitsExpire(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	s, err := c.Semaphore("gpu", "pool-2", 2)
	require.NoError(t, err)
	p1, err := s.TryAcquire(ctx, 500*time.Millisecond)
	require.NoError(t, err)
	require.Zero(t, p1.Fence())
	p2, err := s.TryAcquire(ctx, 500*time.Millisecond)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx, time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	held, err := s.Held(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, held)
	ttl, err := p1.TTL(ctx)
	require.NoError(t, err)
	require.Positive(t, ttl)
	e.RequireTTLs(nil)

	require.NoError(t, p2.Refresh(ctx, 3*time.Second))
	e.Advance(600 * time.Millisecond)
	held, err = s.Held(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, held, "p1 expired, p2 was refreshed")
	p3, err := s.TryAcquire(ctx, time.Second)
	require.NoError(t, err)
	require.ErrorIs(t, p1.Release(ctx), ErrNotHeld)
	require.ErrorIs(t, p1.Refresh(ctx, time.Second), ErrLockLost, "p1's context ran out locally")
	require.NoError(t, p2.Release(ctx))
	require.NoError(t, p3.Release(ctx))
	require.ErrorIs(t, p3.Release(ctx), ErrNotHeld)
	_, err = p3.TTL(ctx)
	require.ErrorIs(t, err, ErrNotHeld)

	_, err = s.Acquire(ctx, time.Second, WithFairness(0))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = s.TryAcquire(ctx, 0)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestSemaphoreWatchdog(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	s, err := c.Semaphore("gpu", "pool-3", 1)
	require.NoError(t, err)
	p, err := s.TryAcquire(ctx, 500*time.Millisecond, WithWatchdog(50*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(700 * time.Millisecond)
	require.NoError(t, p.Context().Err(), "permit kept alive")
	ttl, err := p.TTL(ctx)
	require.NoError(t, err)
	require.Positive(t, ttl)
	require.NoError(t, p.Release(ctx))
	held, err := s.Held(ctx)
	require.NoError(t, err)
	require.Zero(t, held)
}

// A lease that is not a whole number of milliseconds is rounded up on the
// server: the lock's value and the permit's score never promise less than
// the TTL the holder counts from. On a real server, with N=1, a second
// holder never gets the permit before the first holder's local deadline
// (its TTL counted from just before its request), in 1,000 rounds.
func TestLeasesNeverEndEarly(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	const ttl = 2*time.Second + 300*time.Microsecond
	l, err := c.TryAcquire(ctx, "doc", "frac", ttl)
	require.NoError(t, err)
	v, err := e.Client.Get(ctx, l.Key()).Result()
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(v, ":2001"), "lease %q: 2000.3ms rounds up to 2001ms", v)
	require.NoError(t, l.Refresh(ctx, ttl))
	v, err = e.Client.Get(ctx, l.Key()).Result()
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(v, ":2001"), "refreshed lease %q", v)
	require.NoError(t, l.Release(ctx))

	s, err := c.Semaphore("gpu", "frac", 1)
	require.NoError(t, err)
	before := e.Now()
	p, err := s.TryAcquire(ctx, ttl)
	require.NoError(t, err)
	score, err := e.Client.ZScore(ctx, s.key, p.Token()).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, int64(score), before.Add(ttl).Add(time.Millisecond-1).UnixMilli(),
		"the permit expires no earlier than the holder's deadline, rounded up")
	require.NoError(t, p.Release(ctx))
	if !e.Real() {
		return // the edge rounds need a running server clock
	}

	s, err = c.Semaphore("gpu", "edge", 1)
	require.NoError(t, err)
	const short = 3*time.Millisecond + 700*time.Microsecond
	const rounds = 1000
	overlaps := 0
	earliest := time.Duration(math.MaxInt64)
	for r := 0; r < rounds; r++ {
		sent := time.Now()
		_, err := s.TryAcquire(ctx, short)
		require.NoError(t, err)
		for {
			p, err := s.TryAcquire(ctx, short)
			if errors.Is(err, ErrNotObtained) {
				continue
			}
			require.NoError(t, err)
			at := time.Since(sent)
			earliest = min(earliest, at)
			if at < short {
				overlaps++
			}
			if err := p.Release(ctx); !errors.Is(err, ErrNotHeld) {
				require.NoError(t, err) // its own short lease may have run out already
			}
			break
		}
	}
	t.Logf("%s: %d rounds, %d overlaps, earliest takeover %v after the holder's send (lease %v)", e.Backend, rounds, overlaps, earliest, short)
	require.Zero(t, overlaps)
}
