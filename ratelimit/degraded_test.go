package ratelimit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/ratelimit"
)

// modes records WithDegradedMode's callbacks.
type modes struct {
	mu  sync.Mutex
	got []bool
}

func (m *modes) record(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, on)
}

func (m *modes) seen() []bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]bool(nil), m.got...)
}

// Redis stalls: the limiter switches to degraded mode, says so once, and
// admits in process exactly its share of the policy (the rate divided by
// the two live instances); Redis answers again: it switches back and
// decides in Redis; it stalls again: the local limit has not begun anew.
func TestDegradedModeSwitchAndRecovery(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	startClock(e)
	p := one(ratelimit.FixedWindow, ratelimit.PerHour(100))
	// another instance, on a client the proxy does not touch
	other, err := ratelimit.New(e.Client, p, ratelimit.WithNamespace(e.NS), ratelimit.WithDegradedMode(nil))
	require.NoError(t, err)
	defer other.Close()
	c, px := e.ProxyClient(&redis.Options{MaxRetries: -1, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, DialTimeout: 200 * time.Millisecond})
	var m modes
	l, err := ratelimit.New(c, p, ratelimit.WithNamespace(e.NS), ratelimit.WithDegradedMode(m.record))
	require.NoError(t, err)
	defer l.Close()
	inst := e.NS.Prefix + "ratelimit:instances"
	harness.WaitFor(t, "both instances registered", func() bool {
		n, err := e.Client.ZCard(ctx, inst).Result()
		require.NoError(t, err)
		return n == 2
	})
	// Wait for the proxied instance's heartbeat to see both: a fixed
	// sleep past one heartbeat loses to a busy machine.
	harness.WaitFor(t, "the heartbeat counts both instances", func() bool { return ratelimit.LiveInstances(l) == 2 })

	res, err := l.Allow(ctx, "u")
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.False(t, res.Local)
	require.Empty(t, m.seen())

	px.Stall()
	admitted := 0
	for i := 0; i < 60; i++ {
		res, err := l.Allow(ctx, "u")
		require.NoError(t, err, "degraded mode answers instead of failing")
		require.True(t, res.Local)
		if res.Allowed {
			admitted++
		}
	}
	require.Equal(t, 50, admitted, "the rate divided by the 2 live instances")
	require.Equal(t, []bool{true}, m.seen(), "one switch, reported once")

	px.Resume()
	harness.WaitFor(t, "the switch back", func() bool { return len(m.seen()) == 2 })
	require.Equal(t, []bool{true, false}, m.seen())
	res, err = l.Allow(ctx, "u")
	require.NoError(t, err)
	require.False(t, res.Local, "decided in Redis again")
	require.True(t, res.Allowed)
	// Redis's count: the local decisions never reached it; the check that
	// timed out on the stall may have (the proxy delivers it on Resume)
	require.Contains(t, []int{97, 98}, res.Remaining)

	// Redis stalls again: the local limit is where the first outage left
	// it (a fresh one per switch would admit another 50 on a flapping
	// connection)
	px.Stall()
	for i := 0; i < 10; i++ {
		res, err := l.Allow(ctx, "u")
		require.NoError(t, err)
		require.True(t, res.Local)
		require.False(t, res.Allowed, "no fresh local burst at the second switch")
	}
	require.Equal(t, []bool{true, false, true}, m.seen())
	px.Resume()
}

// Without the option an outage is an error, never a decision; bad input
// stays an error in degraded mode too.
func TestDegradedModeOnlyForOutages(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	startClock(e)
	c, px := e.ProxyClient(&redis.Options{MaxRetries: -1, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, DialTimeout: 200 * time.Millisecond})
	plain, err := ratelimit.New(c, one(ratelimit.GCRA, ratelimit.PerSecond(10)), ratelimit.WithNamespace(e.NS))
	require.NoError(t, err)
	l, err := ratelimit.New(c, one(ratelimit.GCRA, ratelimit.PerSecond(10)), ratelimit.WithNamespace(e.NS), ratelimit.WithDegradedMode(nil))
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Allow(ctx, "u")
	require.NoError(t, err)
	px.Stall()
	defer px.Resume()
	_, err = plain.Allow(ctx, "u")
	require.Error(t, err)
	res, err := l.Allow(ctx, "u")
	require.NoError(t, err)
	require.True(t, res.Local)
	_, err = l.Allow(ctx, "")
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	res, err = l.AllowN(ctx, "u", 1000)
	require.NoError(t, err)
	require.True(t, res.Local)
	require.False(t, res.Allowed)
	require.Equal(t, ratelimit.Never, res.RetryAfter, "above the capacity, as in Redis")
	_, _, err = l.AllowAtMost(ctx, "u", 0)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	// AllowAtMost decides locally too: what the local bucket has, then
	// the wait for one unit.
	n, res, err := l.AllowAtMost(ctx, "w", 1000)
	require.NoError(t, err)
	require.True(t, res.Local)
	require.True(t, res.Allowed)
	require.Equal(t, 10, n, "the whole local bucket of the one live instance")
	n, res, err = l.AllowAtMost(ctx, "w", 1000)
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, res.Allowed)
	require.Positive(t, res.RetryAfter)
	require.LessOrEqual(t, res.RetryAfter, 100*time.Millisecond)
	require.Error(t, l.Reset(ctx, "u"), "writes still need Redis")
}

// Close removes the instance from the registry.
func TestDegradedModeClose(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	l, err := ratelimit.New(e.Client, one(ratelimit.GCRA, ratelimit.PerSecond(10)), ratelimit.WithNamespace(e.NS), ratelimit.WithDegradedMode(nil))
	require.NoError(t, err)
	inst := e.NS.Prefix + "ratelimit:instances"
	harness.WaitFor(t, "the instance registered", func() bool { return e.Client.ZCard(ctx, inst).Val() == 1 })
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "twice is fine")
	require.Zero(t, e.Client.ZCard(ctx, inst).Val())
}

// The invariant: two instances degraded at once, each hammered by many
// goroutines, admit together no more than the policy (each exactly its
// half).
func TestDegradedModeConcurrentInstances(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	startClock(e)
	p := one(ratelimit.Sliding, ratelimit.PerHour(100))
	opt := &redis.Options{MaxRetries: -1, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, DialTimeout: 200 * time.Millisecond}
	var ls []*ratelimit.Limiter
	var pxs []*harness.Proxy
	for i := 0; i < 2; i++ {
		c, px := e.ProxyClient(opt)
		l, err := ratelimit.New(c, p, ratelimit.WithNamespace(e.NS), ratelimit.WithDegradedMode(nil))
		require.NoError(t, err)
		defer l.Close()
		ls, pxs = append(ls, l), append(pxs, px)
	}
	harness.WaitFor(t, "both instances registered", func() bool { return e.Client.ZCard(ctx, e.NS.Prefix+"ratelimit:instances").Val() == 2 })
	harness.WaitFor(t, "a heartbeat of each counts both", func() bool {
		return ratelimit.LiveInstances(ls[0]) == 2 && ratelimit.LiveInstances(ls[1]) == 2
	})
	for _, px := range pxs {
		px.Stall()
		defer px.Resume()
	}
	total := int64(0)
	for _, l := range ls {
		n := hammer(t, 50, 4, func(int) (ratelimit.Result, error) { return l.Allow(ctx, "u") })
		require.EqualValues(t, 50, n, "exactly its share")
		total += n
	}
	require.EqualValues(t, 100, total, "together, the policy")
}
