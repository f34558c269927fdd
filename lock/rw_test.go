package lock

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

func TestRWReadersShareWritersExclude(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	m, err := c.RWMutex("doc", "7")
	require.NoError(t, err)

	r1, err := m.TryRLock(ctx, 5*time.Second)
	require.NoError(t, err)
	require.Zero(t, r1.Fence())
	r2, err := m.TryRLock(ctx, 5*time.Second)
	require.NoError(t, err)
	_, err = m.TryLock(ctx, time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "readers hold it")
	_, err = m.TryRLock(ctx, time.Second)
	require.NoError(t, err, "TryLock does not keep readers out")

	// A waiting writer turns new readers away (writer preference).
	got := make(chan *Lock, 1)
	go func() {
		w, err := m.Lock(ctx, 5*time.Second, WithRetry(LinearBackoff(5*time.Millisecond)))
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	harness.WaitFor(t, "a waiting writer", func() bool { return e.Client.ZCard(ctx, m.wKeys[3]).Val() == 1 })
	_, err = m.TryRLock(ctx, time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "a writer waits")
	ttl, err := r1.TTL(ctx)
	require.NoError(t, err)
	require.Greater(t, ttl, time.Second)
	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r2.Release(ctx))
	// The third reader's lease still holds; it ends on its own.
	select {
	case <-got:
		t.Fatal("writer got the lock while a reader held it")
	case <-time.After(50 * time.Millisecond):
	}
	e.Advance(1100 * time.Millisecond)
	if e.Mini == nil {
		time.Sleep(1100 * time.Millisecond)
	}
	w := <-got
	require.NotNil(t, w)
	require.Positive(t, w.Fence())
	require.Zero(t, e.Client.Exists(ctx, m.wKeys[3]).Val(), "no writer waits any more")
	_, err = m.TryRLock(ctx, time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "the writer holds it")
	_, err = m.TryLock(ctx, time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.NoError(t, w.Refresh(ctx, 6*time.Second))
	require.NoError(t, w.Release(ctx))

	w2, err := m.TryLock(ctx, time.Second)
	require.NoError(t, err)
	require.Greater(t, w2.Fence(), w.Fence())
	require.NoError(t, w2.Release(ctx))
	r, err := m.RLock(ctx, time.Second)
	require.NoError(t, err)
	require.NoError(t, r.Release(ctx))
	e.RequireTTLs(nil)

	// A writer that gives up leaves at once.
	r, err = m.TryRLock(ctx, 5*time.Second)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err = m.Lock(wctx, time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	harness.WaitFor(t, "the writer left", func() bool { return e.Client.Exists(ctx, m.wKeys[3]).Val() == 0 })
	_, err = m.TryRLock(ctx, time.Second)
	require.NoError(t, err)
	require.NoError(t, r.Release(ctx))

	for name, f := range map[string]func() error{
		"fair":    func() error { _, err := m.RLock(ctx, time.Second, WithFairness(0)); return err },
		"ttl":     func() error { _, err := m.TryLock(ctx, 0); return err },
		"no type": func() error { _, err := c.RWMutex("", "x"); return err },
	} {
		require.ErrorIs(t, f(), ErrInvalid, name)
	}
}

// TestRWReadersNeverOverlapAWriter: many goroutines read and write one
// resource; a writer never overlaps a reader or another writer, and the
// writers' fences increase.
func TestRWReadersNeverOverlapAWriter(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	m, err := c.RWMutex("doc", "hot")
	require.NoError(t, err)
	const goroutines, rounds = 24, 25
	var readers, writers, bad, reads, writes, maxReaders atomic.Int64
	var fmu sync.Mutex
	var last int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			retry := WithRetry(LinearBackoff(time.Millisecond))
			for range rounds {
				if rng.IntN(4) == 0 {
					l, err := m.Lock(ctx, 5*time.Second, retry)
					if err != nil {
						t.Error(err)
						return
					}
					if writers.Add(1) != 1 || readers.Load() != 0 {
						bad.Add(1)
					}
					fmu.Lock()
					if l.Fence() <= last {
						bad.Add(1)
					}
					last = l.Fence()
					fmu.Unlock()
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
					writers.Add(-1)
					writes.Add(1)
					if err := l.Release(ctx); err != nil {
						t.Error(err)
					}
					continue
				}
				l, err := m.RLock(ctx, 5*time.Second, retry)
				if err != nil {
					t.Error(err)
					return
				}
				n := readers.Add(1)
				if writers.Load() != 0 {
					bad.Add(1)
				}
				for {
					mx := maxReaders.Load()
					if n <= mx || maxReaders.CompareAndSwap(mx, n) {
						break
					}
				}
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
				readers.Add(-1)
				reads.Add(1)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, bad.Load(), "a writer overlapped a reader or a writer, or a fence went back")
	require.EqualValues(t, goroutines*rounds, reads.Load()+writes.Load())
	require.Positive(t, writes.Load())
	require.Greater(t, maxReaders.Load(), int64(1), "readers shared the lock")
	e.RequireTTLs(nil)
}
