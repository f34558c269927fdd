package lock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

func queueLen(t *testing.T, e *harness.Env, typ, id string) int64 {
	t.Helper()
	k, err := queueKey.Key(e.NS, typ, id)
	require.NoError(t, err)
	n, err := e.Client.LLen(context.Background(), k).Result()
	require.NoError(t, err)
	return n
}

func TestFairArrivalOrder(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	holder, err := c.TryAcquire(ctx, "doc", "fair", 5*time.Second)
	require.NoError(t, err)

	const n = 8
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.Acquire(ctx, "doc", "fair", 5*time.Second, WithFairness(2*time.Second), WithRetry(LinearBackoff(5*time.Millisecond)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			if err := l.Release(ctx); err != nil {
				t.Error(err)
			}
		}()
		harness.WaitFor(t, "waiter to queue", func() bool { return queueLen(t, e, "doc", "fair") == int64(i+1) })
	}
	// A fair TryAcquire does not jump the queue, and does not join it.
	require.NoError(t, holder.Release(ctx))
	_, err = c.TryAcquire(ctx, "doc", "fair", time.Second, WithFairness(0))
	require.ErrorIs(t, err, ErrNotObtained)
	wg.Wait()
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order)
	require.Zero(t, queueLen(t, e, "doc", "fair"))
	e.RequireTTLs(nil)
}

func TestFairVanishedWaiterStopsBlocking(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(2 * time.Second)
	c := newClient(t, e)
	ctx := e.Ctx()
	holder, err := c.TryAcquire(ctx, "doc", "ghost", 5*time.Second)
	require.NoError(t, err)

	// A waiter queues once with a 1s keep, then disappears.
	r, err := c.resource("test", "doc", "ghost")
	require.NoError(t, err)
	qk, _ := queueKey.Key(e.NS, "doc", "ghost")
	wk, _ := waitersKey.Key(e.NS, "doc", "ghost")
	_, err = c.run.Run(ctx, fairAcquireOp, []string{r.lock, r.fenc, qk, wk}, "ghost", 1000, 3600000, 1000, "1", 300000)
	require.ErrorIs(t, err, ErrNotObtained)
	pttl, err := e.Client.PTTL(ctx, qk).Result()
	require.NoError(t, err)
	require.Positive(t, pttl, "the queue has a TTL")

	got := make(chan *Lock, 1)
	go func() {
		l, err := c.Acquire(ctx, "doc", "ghost", time.Second, WithFairness(5*time.Second), WithRetry(LinearBackoff(5*time.Millisecond)))
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	harness.WaitFor(t, "second waiter", func() bool { return queueLen(t, e, "doc", "ghost") == 2 })
	require.NoError(t, holder.Release(ctx))
	select {
	case <-got:
		t.Fatal("overtook the first waiter before its place expired")
	case <-time.After(100 * time.Millisecond):
	}
	e.Advance(1100 * time.Millisecond)
	select {
	case l := <-got:
		require.NotNil(t, l)
		require.NoError(t, l.Release(ctx))
	case <-time.After(3 * time.Second):
		t.Fatal("the vanished waiter still blocks")
	}
}

func TestFairWaiterThatGivesUpLeaves(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	holder, err := c.TryAcquire(ctx, "doc", "quit", 5*time.Second)
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = c.Acquire(short, "doc", "quit", time.Second, WithFairness(time.Minute/2), WithRetry(LinearBackoff(10*time.Millisecond)))
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// At once, or in the background when the deadline caught an attempt on
	// the wire (its outcome unknown, Acquire cleans up asynchronously).
	harness.WaitFor(t, "the waiter left", func() bool { return queueLen(t, e, "doc", "quit") == 0 })
	// With the queue empty, the lock is free for anyone once released.
	require.NoError(t, holder.Release(ctx))
	l, err := c.TryAcquire(ctx, "doc", "quit", time.Second, WithFairness(0))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}
