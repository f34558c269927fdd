package lock

import (
	"context"
	"testing"
	"time"

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
