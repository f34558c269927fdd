package lock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// TestWakeupsHandOff: with WithWakeups a waiter whose backoff is far
// longer than its deadline still gets the lock when it is released, woken
// by the release's SPUBLISH; on miniredis, which has no sharded pub/sub,
// the waiter polls (its backoff is short there).
func TestWakeupsHandOff(t *testing.T) {
	e := harness.New(t)
	a := newClient(t, e, WithWakeups())
	b := newClient(t, e, WithWakeups())
	ctx := e.Ctx()
	backoff := 10 * time.Second // beyond the wait's deadline: only a wake-up can hand off
	if e.Mini != nil {
		backoff = 10 * time.Millisecond // the fallback: polling
	}
	for round := range 3 {
		held, err := a.TryAcquire(ctx, "doc", "hot", 10*time.Second)
		require.NoError(t, err)
		go func() {
			time.Sleep(50 * time.Millisecond)
			if err := held.Release(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := b.Acquire(wctx, "doc", "hot", 10*time.Second, WithRetry(LinearBackoff(backoff)))
		cancel()
		require.NoError(t, err, "round %d", round)
		require.Greater(t, l.Fence(), held.Fence())
		require.NoError(t, l.Release(ctx))
	}
	e.RequireTTLs(nil)
}

// TestWakeupsEveryKind: with WithWakeups the releases of multi-locks,
// read-write locks and semaphores wake their waiters too, as TestWakeups-
// HandOff checks for a plain lock: each waiter's backoff lies beyond its
// wait's deadline on redis and the cluster, so only a wake-up hands off
// (a waiting writer polls every RWKeep/3, also beyond it); miniredis has
// no sharded pub/sub and its waiters poll.
func TestWakeupsEveryKind(t *testing.T) {
	e := harness.New(t)
	a := newClient(t, e, WithWakeups())
	b := newClient(t, e, WithWakeups())
	ctx := e.Ctx()
	backoff := LinearBackoff(10 * time.Second)
	if e.Mini != nil {
		backoff = LinearBackoff(10 * time.Millisecond)
	}
	const ttl = 10 * time.Second
	// handOff releases the leases, one every 50ms, after the waiter has
	// started, and requires wait to succeed within 5s, or 600ms for a
	// writer (which polls every RWKeep/3 whatever its backoff).
	handOff := func(name string, wait func(ctx context.Context) (func() error, error), leases ...func() error) {
		t.Helper()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, release := range leases {
				time.Sleep(50 * time.Millisecond)
				if err := release(); err != nil {
					t.Error(name, err)
				}
			}
		}()
		limit := 5 * time.Second
		if strings.HasPrefix(name, "writer") {
			limit = 600 * time.Millisecond
		}
		wctx, cancel := context.WithTimeout(ctx, limit)
		release, err := wait(wctx)
		cancel()
		<-done
		require.NoError(t, err, name)
		require.NoError(t, release(), name)
	}
	rel := func(l *Lock) func() error { return func() error { return l.Release(ctx) } }

	// Multi-locks: a waiter on a set of resources in several slots wakes
	// when the held one is released, and a multi-lock's release wakes a
	// plain waiter.
	set := []Resource{{"doc", "m1"}, {"doc", "m2"}, {"doc", "m3"}, {"doc", "m4"}}
	for round := range 2 {
		held, err := a.TryAcquire(ctx, "doc", set[1+round].ID, ttl)
		require.NoError(t, err)
		handOff("multi waits for a lock", func(wctx context.Context) (func() error, error) {
			m, err := b.AcquireMulti(wctx, set, ttl, WithRetry(backoff))
			if err != nil {
				return nil, err
			}
			require.Greater(t, m.Fences()[1+round], held.Fence())
			return func() error { return m.Release(ctx) }, nil
		}, rel(held))
	}
	m, err := a.TryAcquireMulti(ctx, set, ttl)
	require.NoError(t, err)
	handOff("lock waits for a multi-lock", func(wctx context.Context) (func() error, error) {
		l, err := b.Acquire(wctx, "doc", "m3", ttl, WithRetry(backoff))
		if err != nil {
			return nil, err
		}
		return rel(l), nil
	}, func() error { return m.Release(ctx) })

	// Read-write locks: a writer's release wakes a reader and a writer;
	// the last reader's release wakes a writer.
	rwa, err := a.RWMutex("doc", "rw")
	require.NoError(t, err)
	rwb, err := b.RWMutex("doc", "rw")
	require.NoError(t, err)
	rlock := func(wctx context.Context) (func() error, error) {
		l, err := rwb.RLock(wctx, ttl, WithRetry(backoff))
		if err != nil {
			return nil, err
		}
		return rel(l), nil
	}
	wlock := func(wctx context.Context) (func() error, error) {
		l, err := rwb.Lock(wctx, ttl, WithRetry(backoff))
		if err != nil {
			return nil, err
		}
		return rel(l), nil
	}
	w, err := rwa.TryLock(ctx, ttl)
	require.NoError(t, err)
	handOff("reader waits for the writer", rlock, rel(w))
	w, err = rwa.TryLock(ctx, ttl)
	require.NoError(t, err)
	handOff("writer waits for the writer", wlock, rel(w))
	r1, err := rwa.TryRLock(ctx, ttl)
	require.NoError(t, err)
	r2, err := rwa.TryRLock(ctx, ttl)
	require.NoError(t, err)
	var sub *redis.PubSub
	if e.Mini == nil {
		// Only the last reader announces: the channel carries one
		// announcement for the two releases, then the test's marker.
		ch, err := b.releasedChannel("test", "doc", "rw")
		require.NoError(t, err)
		sub = e.Client.SSubscribe(ctx, ch)
		defer sub.Close()
		_, err = sub.Receive(ctx)
		require.NoError(t, err)
	}
	handOff("writer waits for the readers", wlock, rel(r1), rel(r2))
	if sub != nil {
		ch, _ := b.releasedChannel("test", "doc", "rw")
		require.NoError(t, e.Client.SPublish(ctx, ch, "marker").Err())
		var got []string
		for len(got) == 0 || got[len(got)-1] != "marker" {
			msg, err := sub.ReceiveMessage(ctx)
			require.NoError(t, err)
			got = append(got, msg.Payload)
		}
		// The readers' last release, the writer's release, the marker.
		require.Equal(t, []string{"1", "1", "marker"}, got)
	}

	// Semaphores: a permit's release wakes a weighted waiter.
	sa, err := a.Semaphore("doc", "sem", 3)
	require.NoError(t, err)
	sb, err := b.Semaphore("doc", "sem", 3)
	require.NoError(t, err)
	p1, err := sa.TryAcquire(ctx, ttl)
	require.NoError(t, err)
	p2, err := sa.TryAcquireN(ctx, 2, ttl)
	require.NoError(t, err)
	handOff("AcquireN waits for permits", func(wctx context.Context) (func() error, error) {
		l, err := sb.AcquireN(wctx, 2, ttl, WithRetry(backoff))
		if err != nil {
			return nil, err
		}
		return rel(l), nil
	}, rel(p2))
	require.NoError(t, p1.Release(ctx))
	e.RequireTTLs(nil)
}
