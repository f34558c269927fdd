package lock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// The test servers have no replicas, so every durable write is done and
// reported with ErrNotDurable, its result returned with it: the lease is
// held. A refused acquire keeps ErrNotObtained.
func TestDurabilityWithoutReplicas(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e, WithDurability(1, 20*time.Millisecond))

	l, err := c.TryAcquire(ctx, "doc", "d1", time.Minute)
	require.ErrorIs(t, err, ErrNotDurable)
	require.NotNil(t, l, "the lease comes with ErrNotDurable")
	assert.Positive(t, l.Fence())
	_, err = c.TryAcquire(ctx, "doc", "d1", time.Minute)
	require.ErrorIs(t, err, ErrNotObtained, "held: refused, not ErrNotDurable")
	assert.NotErrorIs(t, err, ErrNotDurable)
	require.ErrorIs(t, l.Refresh(ctx, 2*time.Minute), ErrNotDurable)
	ttl, err := l.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Minute, "the refresh was done")
	require.NoError(t, l.Release(ctx), "a release does not wait")

	s, err := c.Semaphore("pool", "d2", 2)
	require.NoError(t, err)
	p, err := s.TryAcquire(ctx, time.Minute)
	require.ErrorIs(t, err, ErrNotDurable)
	require.NotNil(t, p)
	n, err := s.Held(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	g, err := c.Interval("d3", time.Hour, 0)
	require.NoError(t, err)
	run, err := g.Claim(ctx)
	require.ErrorIs(t, err, ErrNotDurable)
	assert.True(t, run.Claimed)
	run, err = g.Claim(ctx)
	require.NoError(t, err, "not claimed: nothing written, nothing to wait for")
	assert.False(t, run.Claimed)
}

func TestDurabilityOptionChecked(t *testing.T) {
	nop := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer nop.Close()
	for _, d := range [][2]int{{0, 100}, {-1, 100}, {65, 100}, {1, 0}, {1, 60000}} {
		_, err := New(nop, WithDurability(d[0], time.Duration(d[1])*time.Millisecond))
		assert.ErrorIs(t, err, ErrInvalid, "%v", d)
	}
	_, err := New(nop, WithDurability(1, 100*time.Millisecond))
	assert.NoError(t, err)
}

// A network failure or a timeout is never ErrNotObtained or ErrNotHeld,
// whichever call meets it (issue 21: a TryAcquire whose context ended
// while the master was unreachable said "not obtained").
func TestOutagesAreNotOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{ContextTimeoutEnabled: true, MaxRetries: -1})
	c, err := New(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	l, err := c.TryAcquire(ctx, "doc", "held", time.Minute)
	require.NoError(t, err)
	s, err := c.Semaphore("pool", "out", 1)
	require.NoError(t, err)
	g, err := c.Interval("out", time.Hour, time.Second)
	require.NoError(t, err)
	p.Stall()
	defer p.Resume()
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	calls := map[string]func() error{
		"try acquire":       func() error { _, err := c.TryAcquire(short(), "doc", "free", time.Second); return err },
		"acquire":           func() error { _, err := c.Acquire(short(), "doc", "free", time.Second); return err },
		"fair acquire":      func() error { _, err := c.Acquire(short(), "doc", "free", time.Second, WithFairness(0)); return err },
		"semaphore":         func() error { _, err := s.TryAcquire(short(), time.Second); return err },
		"semaphore wait":    func() error { _, err := s.Acquire(short(), time.Second); return err },
		"claim":             func() error { _, err := g.Claim(short()); return err },
		"refresh":           func() error { return l.Refresh(short(), time.Minute) },
		"ttl":               func() error { _, err := l.TTL(short()); return err },
		"semaphore held":    func() error { _, err := s.Held(short()); return err },
		"interval last run": func() error { _, err := g.LastRun(short()); return err },
	}
	for name, call := range calls {
		err := call()
		require.Error(t, err, name)
		assert.NotErrorIs(t, err, ErrNotObtained, "%s: %v", name, err)
		assert.NotErrorIs(t, err, ErrNotHeld, "%s: %v", name, err)
	}
}
