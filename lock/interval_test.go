package lock

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func TestInterval20InstancesRunOncePerInterval(t *testing.T) {
	e := harness.New(t)
	const every = 250 * time.Millisecond
	e.RequireShortWaits(10 * (every + 10*time.Millisecond))
	ctx := e.Ctx()
	// 20 instances, each with its own client value (as separate processes).
	var guards []*Interval
	for range 20 {
		g, err := newClient(t, e).Interval("unread-reminder", every, 0)
		require.NoError(t, err)
		guards = append(guards, g)
	}
	var runs atomic.Int32
	var lastAt atomic.Int64
	for round := range 10 {
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{}) // all instances fire at once
		for _, g := range guards {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				run, err := g.Claim(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if run.Claimed {
					wins.Add(1)
					runs.Add(1)
					lastAt.Store(run.At.UnixMilli())
				} else if !run.Next.After(run.At) {
					t.Errorf("not claimed, yet next run %v is not after now %v", run.Next, run.At)
				}
			}()
		}
		began := time.Now()
		close(start)
		wg.Wait()
		require.EqualValues(t, 1, wins.Load(), "round %d (its claims took %v of a %v interval)", round, time.Since(began), every)
		e.Advance(every + 10*time.Millisecond)
	}
	require.EqualValues(t, 10, runs.Load())
	last, err := guards[0].LastRun(ctx)
	require.NoError(t, err)
	require.Equal(t, lastAt.Load(), last.UnixMilli())
	e.RequireTTLs(func(k string) bool { return k == guards[0].Key() })
}

func TestIntervalSeedCompatible(t *testing.T) {
	e := harness.New(t)
	ns := e.NS
	ns.NoHashTags = true
	if e.Backend == harness.Cluster {
		ns.NoHashTags = false // single-key ops are fine, but keep the lease co-located
	}
	c, err := New(e.Client, WithNamespace(ns))
	require.NoError(t, err)
	ctx := e.Ctx()
	g, err := c.Interval("cleanup-tokens", time.Hour, 0)
	require.NoError(t, err)
	if ns.NoHashTags {
		require.Equal(t, ns.Prefix+"cron:last-run:cleanup-tokens", g.Key(), "seed 004 bytes")
	}
	never, err := g.LastRun(ctx)
	require.NoError(t, err)
	require.True(t, never.IsZero())

	// The seed's app wrote a run 10 minutes ago (Date.now().toString()).
	prev := e.Now().Add(-10 * time.Minute).UnixMilli()
	require.NoError(t, e.Client.Set(ctx, g.Key(), strconv.FormatInt(prev, 10), 0).Err())
	run, err := g.Claim(ctx)
	require.NoError(t, err)
	require.False(t, run.Claimed)
	require.Equal(t, prev, run.Previous.UnixMilli())
	require.Equal(t, prev+time.Hour.Milliseconds(), run.Next.UnixMilli())

	require.NoError(t, e.Client.Set(ctx, g.Key(), strconv.FormatInt(prev-time.Hour.Milliseconds(), 10), 0).Err())
	run, err = g.Claim(ctx)
	require.NoError(t, err)
	require.True(t, run.Claimed)
	v, err := e.Client.Get(ctx, g.Key()).Result()
	require.NoError(t, err)
	require.Equal(t, strconv.FormatInt(run.At.UnixMilli(), 10), v, "decimal Unix ms")
	pttl, err := e.Client.PTTL(ctx, g.Key()).Result()
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), pttl, "no TTL, as the seed")
	last, err := g.LastRun(ctx)
	require.NoError(t, err)
	require.Equal(t, run.At, last)

	require.NoError(t, e.Client.Set(ctx, g.Key(), "yesterday", 0).Err())
	_, err = g.Claim(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	require.Contains(t, err.Error(), g.Key())
	_, err = g.LastRun(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
}

func TestIntervalLeasePreventsOverlap(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(time.Second)
	c := newClient(t, e)
	ctx := e.Ctx()
	g, err := c.Interval("report", 100*time.Millisecond, 5*time.Second)
	require.NoError(t, err)
	run, err := g.Claim(ctx)
	require.NoError(t, err)
	require.True(t, run.Claimed)
	require.NotNil(t, run.Lease)
	require.Positive(t, run.Lease.Fence())
	lk, err := lockKey.Key(e.NS, CronResource, "report")
	require.NoError(t, err)
	require.Equal(t, lk, run.Lease.Key())
	require.True(t, keys.SameSlot(g.Key(), lk))

	e.Advance(200 * time.Millisecond) // interval passed, but the run goes on
	again, err := g.Claim(ctx)
	require.NoError(t, err)
	require.False(t, again.Claimed)
	require.True(t, again.Next.After(again.At.Add(4*time.Second)), "next waits for the lease")

	require.NoError(t, run.Lease.Release(ctx))
	again, err = g.Claim(ctx)
	require.NoError(t, err)
	require.True(t, again.Claimed)
	require.Greater(t, again.Lease.Fence(), run.Lease.Fence())
	require.NoError(t, again.Lease.Release(ctx))
}

func TestIntervalDo(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	g, err := c.Interval("digest", time.Hour, time.Second)
	require.NoError(t, err)
	var calls int
	ran, err := g.Do(ctx, func(ctx context.Context) error {
		calls++
		require.NoError(t, ctx.Err())
		return nil
	})
	require.NoError(t, err)
	require.True(t, ran)
	ran, err = g.Do(ctx, func(context.Context) error { calls++; return nil })
	require.NoError(t, err)
	require.False(t, ran)
	require.Equal(t, 1, calls)
	lk, _ := lockKey.Key(e.NS, CronResource, "digest")
	n, err := e.Client.Exists(ctx, lk).Result()
	require.NoError(t, err)
	require.Zero(t, n, "Do released the lease")

	plain, err := c.Interval("plain", time.Hour, 0)
	require.NoError(t, err)
	ran, err = plain.Do(ctx, func(context.Context) error { return context.Canceled })
	require.True(t, ran)
	require.ErrorIs(t, err, context.Canceled)
}

// FuzzIntervalValue stores arbitrary bytes as a job's last run: Claim and
// LastRun must agree, and either work or report corruption naming the key,
// never panic.
func FuzzIntervalValue(f *testing.F) {
	e := harness.New(f)
	c, err := New(e.Client, WithNamespace(e.NS))
	require.NoError(f, err)
	g, err := c.Interval("fuzz", time.Hour, 0)
	require.NoError(f, err)
	for _, s := range []string{"", "0", "1763883000123", "-5", "1e3", "0x10", "abc", "9999999999999999999", " 12", "1.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ctx := context.Background()
		require.NoError(t, e.Client.Set(ctx, g.Key(), v, 0).Err())
		_, lastErr := g.LastRun(ctx)
		_, claimErr := g.Claim(ctx)
		require.Equal(t, lastErr == nil, claimErr == nil, "LastRun and Claim disagree on %q", v)
		if claimErr != nil {
			require.ErrorIs(t, claimErr, keys.ErrCorrupt)
			require.ErrorIs(t, lastErr, keys.ErrCorrupt)
			require.Contains(t, claimErr.Error(), g.Key())
		}
	})
}

func TestIntervalClaimAndLastRunAgree(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	g, err := c.Interval("agree", time.Hour, 0)
	require.NoError(t, err)
	for _, v := range []string{"1e3", "0x10", " 12", "1.5", "-5", "9999999999999999999", ""} {
		require.NoError(t, e.Client.Set(ctx, g.Key(), v, 0).Err())
		_, err := g.Claim(ctx)
		require.ErrorIs(t, err, keys.ErrCorrupt, "%q", v)
		_, err = g.LastRun(ctx)
		require.ErrorIs(t, err, keys.ErrCorrupt, "%q", v)
	}
}
