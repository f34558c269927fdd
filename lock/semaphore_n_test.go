package lock

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

func TestSemaphoreAcquireN(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	s, err := c.Semaphore("gpu", "node-1", 5)
	require.NoError(t, err)
	for _, n := range []int{0, 6} {
		_, err := s.TryAcquireN(ctx, n, time.Second)
		require.ErrorIs(t, err, ErrInvalid)
	}
	one, err := s.TryAcquire(ctx, 5*time.Second)
	require.NoError(t, err)
	_, err = s.TryAcquireN(ctx, 5, time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "only 4 free")
	four, err := s.TryAcquireN(ctx, 4, 2*time.Second)
	require.NoError(t, err)
	held, err := s.Held(ctx)
	require.NoError(t, err)
	require.Equal(t, 5, held)

	// Refresh extends all four permits, Release frees all four.
	require.NoError(t, four.Refresh(ctx, 8*time.Second))
	scores, err := e.Client.ZRangeWithScores(ctx, s.key, 0, -1).Result()
	require.NoError(t, err)
	var mine []float64
	for _, z := range scores {
		if z.Member.(string) != one.Token() {
			mine = append(mine, z.Score)
		}
	}
	require.Len(t, mine, 4)
	for _, sc := range mine {
		require.Equal(t, mine[0], sc, "the four permits share one expiry")
	}
	require.NoError(t, four.Release(ctx))
	held, err = s.Held(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, held)
	require.NoError(t, one.Release(ctx))
	all, err := s.AcquireN(ctx, 5, time.Second)
	require.NoError(t, err)
	require.NoError(t, all.Release(ctx))
	e.RequireTTLs(nil)
}

// TestSemaphoreAcquireNNeverOverAdmits: goroutines take random weights of
// a limit of 10; the weights held at once never exceed it.
func TestSemaphoreAcquireNNeverOverAdmits(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	const limit, goroutines, rounds = 10, 24, 20
	s, err := c.Semaphore("gpu", "pool", limit)
	require.NoError(t, err)
	var inUse, over, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 4))
			for range rounds {
				n := 1 + rng.IntN(4)
				l, err := s.AcquireN(ctx, n, 5*time.Second, WithRetry(LinearBackoff(time.Millisecond)))
				if err != nil {
					t.Error(err)
					return
				}
				u := inUse.Add(int64(n))
				if u > limit {
					over.Add(1)
				}
				for {
					p := peak.Load()
					if u <= p || peak.CompareAndSwap(p, u) {
						break
					}
				}
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
				inUse.Add(-int64(n))
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, over.Load(), "more than the limit held at once")
	require.Greater(t, peak.Load(), int64(4), "acquisitions overlapped")
	held, err := s.Held(ctx)
	require.NoError(t, err)
	require.Zero(t, held)
}
