package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// TestElectionOneLeader: campaigners take turns leading; never two lead
// at once, Leader names the one that does, fences increase, and an
// observer sees the changes.
func TestElectionOneLeader(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const nodes, rounds = 8, 6
	var leaders, bad, turns atomic.Int64
	var fmu sync.Mutex
	var last int64

	watcher, err := newClient(t, e).Election("scheduler", 2*time.Second)
	require.NoError(t, err)
	octx, stop := context.WithCancel(ctx)
	seen := watcher.Observe(octx, 2*time.Millisecond)
	var omu sync.Mutex
	var observed []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ld := range seen {
			omu.Lock()
			observed = append(observed, ld.Owner)
			omu.Unlock()
		}
	}()

	var wg sync.WaitGroup
	for i := range nodes {
		label := fmt.Sprint("node-", i)
		el, err := newClient(t, e, WithOwner(label)).Election("scheduler", 2*time.Second)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := el.Campaign(ctx, WithRetry(LinearBackoff(2*time.Millisecond)))
				if err != nil {
					t.Error(err)
					return
				}
				if leaders.Add(1) != 1 {
					bad.Add(1)
				}
				ld, err := el.Leader(ctx)
				if err != nil || ld.Owner != l.Token() || ld.Label() != label || ld.Fence != l.Fence() || ld.TTL <= 0 {
					t.Errorf("leader %+v, %v; want %s fence %d", ld, err, l.Token(), l.Fence())
				}
				fmu.Lock()
				if l.Fence() <= last {
					bad.Add(1)
				}
				last = l.Fence()
				fmu.Unlock()
				if _, err := el.Campaign(ctx); !errors.Is(err, ErrInvalid) {
					t.Errorf("a second campaign while leading: %v", err)
				}
				time.Sleep(5 * time.Millisecond)
				leaders.Add(-1)
				turns.Add(1)
				if err := el.Resign(ctx); err != nil {
					t.Error(err)
				}
				<-l.Context().Done()
			}
		}()
	}
	wg.Wait()
	require.Zero(t, bad.Load(), "two leaders at once, or a fence went back")
	require.EqualValues(t, nodes*rounds, turns.Load())
	harness.WaitFor(t, "the observer sees the lead vacant", func() bool {
		ld, err := watcher.Leader(ctx)
		return err == nil && ld.Owner == ""
	})
	// The observer polls on its own goroutine: wait for it to report the
	// vacancy rather than sleep a fixed time that a busy machine outlasts.
	harness.WaitFor(t, "the observer reports the lead vacant", func() bool {
		omu.Lock()
		defer omu.Unlock()
		return len(observed) > 0 && observed[len(observed)-1] == ""
	})
	stop()
	<-done
	require.GreaterOrEqual(t, len(observed), 3, "the observer saw leaders change: %v", observed)
	for i := 1; i < len(observed); i++ {
		require.NotEqual(t, observed[i-1], observed[i], "a change sent twice: %v", observed)
	}
	require.Equal(t, "", observed[len(observed)-1], "the lead ends vacant: %v", observed)
}

func TestElectionLostLeadCancelsContext(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	el, err := newClient(t, e).Election("cron", 300*time.Millisecond)
	require.NoError(t, err)
	l, err := el.Campaign(ctx)
	require.NoError(t, err)
	time.Sleep(350 * time.Millisecond)
	require.NoError(t, l.Context().Err(), "the watchdog keeps the lead")
	require.NoError(t, e.Client.Del(ctx, l.Key()).Err())
	select {
	case <-l.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a lost lead did not cancel the context")
	}
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	require.NoError(t, el.Resign(ctx), "resigning a lost lead is not an error")
	require.NoError(t, el.Resign(ctx), "nor is resigning twice")

	for name, f := range map[string]func() error{
		"ttl":  func() error { _, err := newClient(t, e).Election("x", time.Millisecond); return err },
		"name": func() error { _, err := newClient(t, e).Election("", time.Second); return err },
	} {
		require.ErrorIs(t, f(), ErrInvalid, name)
	}
}
