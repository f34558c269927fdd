package cache

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// 4 independent instances (each its own client, as 4 processes would
// have) × 100 goroutines miss one key at once: the loader runs once in
// total, and every caller gets its value.
func TestStampedeAcrossInstancesLoadsOnce(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const instances, goroutines = 4, 100
	var loads atomic.Int64
	caches := make([]*Cache[item], instances)
	for i := range caches {
		caches[i] = newCacheOn[item](t, e.FreshClient(), e)
	}
	k := NewKey("/api/v1/files/list", "GET", nil)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var wrong, failed atomic.Int64
	for i := 0; i < instances; i++ {
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				v, err := caches[i].Get(ctx, k, func(ctx context.Context) (item, error) {
					loads.Add(1)
					time.Sleep(200 * time.Millisecond)
					return item{Name: "list", N: i}, nil
				})
				if err != nil {
					failed.Add(1)
					t.Log(err)
					return
				}
				if v.Name != "list" {
					wrong.Add(1)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	assert.EqualValues(t, 1, loads.Load(), "one loader call across %d instances × %d goroutines", instances, goroutines)
	assert.Zero(t, failed.Load())
	assert.Zero(t, wrong.Load())
	var collapsed int64
	for _, c := range caches {
		collapsed += c.Stats().Collapsed
	}
	t.Logf("loader calls: %d; callers answered by another's load: %d of %d", loads.Load(), collapsed, instances*goroutines)
}

// The loading instance dies mid-load (its connection stalls: no more
// heartbeats, no write-back): the waiting instance takes over when the
// lease ends, and exactly one of its 100 goroutines calls the loader.
func TestTakeoverWhenTheLoaderDies(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const lease = 300 * time.Millisecond
	pc, p := e.ProxyClient(nil)
	dying := newCacheOn[item](t, pc, e, WithLease(lease), WithLoadTimeout(3*time.Second))
	survivor := newCacheOn[item](t, e.FreshClient(), e, WithLease(lease))
	k := NewKey("/api/v1/files/7", "GET", nil)

	started, release := make(chan struct{}), make(chan struct{})
	dyingDone := make(chan error, 1)
	go func() {
		_, err := dying.Get(ctx, k, func(ctx context.Context) (item, error) {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return item{Name: "dead"}, nil
		})
		dyingDone <- err
	}()
	<-started
	p.Stall() // the process is gone: no heartbeat, no write-back
	t.Cleanup(p.Resume)
	stopClock := runClock(e)
	defer stopClock()

	var loads atomic.Int64
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := 0; g < 100; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := survivor.Get(ctx, k, func(ctx context.Context) (item, error) {
				loads.Add(1)
				time.Sleep(20 * time.Millisecond)
				return item{Name: "survivor"}, nil
			})
			if err != nil || v.Name != "survivor" {
				wrong.Add(1)
				t.Log(v, err)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, loads.Load(), "exactly one takeover load")
	assert.Zero(t, wrong.Load())

	close(release)
	p.Resume()
	<-dyingDone
	v, err := survivor.Get(ctx, k, func(context.Context) (item, error) { return item{Name: "again"}, nil })
	require.NoError(t, err)
	assert.Equal(t, "survivor", v.Name, "the dead loader's late write-back lost its lease and stored nothing")
}

// A hot key read continuously is refreshed early (XFetch) and never
// misses: after the first load no reader ever waits for a loader. On
// miniredis the clock is simulated (60 s in 20 ms steps, TTL 5 s); on a
// real server the run lasts CACHE_HOT_RUN (default 8s, TTL 2s; the
// issue's proof: CACHE_HOT_RUN=60s with TTL 5s).
func TestEarlyRefreshKeepsAHotKeyFresh(t *testing.T) {
	e := harness.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k := NewKey("/api/v1/hot", "GET", nil)
	var loads atomic.Int64
	load := func(ctx context.Context) (item, error) {
		loads.Add(1)
		time.Sleep(20 * time.Millisecond)
		return item{Name: "hot", N: int(loads.Load())}, nil
	}
	var foreground atomic.Int64
	get := func(c *Cache[item]) {
		_, res, err := c.get(ctx, "get", k, load, nil)
		if !assert.NoError(t, err) {
			return
		}
		if res.Status == Loaded && !res.Collapsed {
			foreground.Add(1)
		}
	}
	if e.Mini != nil {
		c := newCache[item](t, e, WithBeta(4), WithPolicy(Policy{Default: 5 * time.Second}))
		for step := 0; step < 3000; step++ {
			for i := 0; i < 3; i++ {
				get(c)
			}
			// Every refresh started has loaded and written back before
			// the clock moves: a write-back still in flight while the
			// steps go on would race the entry's expiry.
			harness.WaitFor(t, "background refreshes", func() bool {
				return c.Stats().Refreshes == loads.Load()-1 && refreshIdle(c.s)
			})
			e.Advance(20 * time.Millisecond)
		}
		assert.EqualValues(t, 1, foreground.Load(), "only the very first read waited for a load")
		t.Logf("60s simulated, TTL 5s: %d loads, %d of them early refreshes", loads.Load(), c.Stats().Refreshes)
		return
	}
	run, ttl := 8*time.Second, 2*time.Second
	if d, err := time.ParseDuration(os.Getenv("CACHE_HOT_RUN")); err == nil && d > 0 {
		run, ttl = d, 5*time.Second
	}
	if deadline, ok := t.Deadline(); ok && time.Until(deadline) < run+10*time.Second {
		t.Skipf("needs %v", run)
	}
	c := newCache[item](t, e, WithBeta(5), WithPolicy(Policy{Default: ttl}))
	end := time.Now().Add(run)
	var wg sync.WaitGroup
	var reads atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				get(c)
				reads.Add(1)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, foreground.Load(), "only the very first read waited for a load")
	t.Logf("%v run, TTL %v: %d reads, %d loads (%d early refreshes), foreground loads %d", run, ttl, reads.Load(), loads.Load(), c.Stats().Refreshes, foreground.Load())
}

// runClock makes miniredis's frozen clock run (10 ms every 2 ms), for
// tests that wait for leases to end; on real backends time runs anyway.
func runClock(e *harness.Env) (stop func()) {
	if e.Mini == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
				e.Advance(10 * time.Millisecond)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// A load that runs past its lease keeps it: the loader's heartbeat
// renews it every third of the lease, so other instances wait for its
// value instead of loading again. The server's clock moves past the
// lease first taken only after each renewal has been seen in Redis, and
// the load ends only once the other instance waits for it.
func TestHeartbeatKeepsTheLeaseOfALongLoad(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	// On a real server the lease runs in real time: long enough that a
	// busy machine's scheduling delay does not outlast a third of it.
	lease := 90 * time.Millisecond
	if e.Real() {
		lease = 900 * time.Millisecond
	}
	e.RequireShortWaits(lease * 3 / 2)
	a := newCacheOn[item](t, e.FreshClient(), e, WithLease(lease))
	b := newCacheOn[item](t, e.FreshClient(), e, WithLease(lease))
	k := NewKey("/api/v1/files/long", "GET", nil)
	ref, err := a.ref("test", k)
	require.NoError(t, err)
	var loads atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before the caches' Close, which waits for the load
	done := make(chan error, 1)
	go func() {
		_, err := a.Get(ctx, k, func(context.Context) (item, error) {
			loads.Add(1)
			close(started)
			<-release
			return item{Name: "long"}, nil
		})
		done <- err
	}()
	<-started
	deadline := func() int64 {
		l := e.Client.HGet(ctx, ref.meta, "lease").Val()
		n, _ := strconv.ParseInt(l[strings.LastIndexByte(l, ':')+1:], 10, 64)
		return n
	}
	last := deadline()
	for i := 0; i < 3; i++ { // 1.5 leases past the lease it took
		e.Advance(lease / 2)
		harness.WaitFor(t, "a renewal of the lease", func() bool { return deadline() > last })
		last = deadline()
	}
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := b.Get(ctx, k, func(context.Context) (item, error) {
				loads.Add(1)
				return item{Name: "second"}, nil
			})
			if err != nil || v.Name != "long" {
				wrong.Add(1)
				t.Log(v, err)
			}
		}()
	}
	harness.WaitFor(t, "b to wait for a's load", func() bool { return e.Client.HGet(ctx, ref.meta, "waiters").Val() != "" })
	free()
	wg.Wait()
	require.NoError(t, <-done)
	assert.EqualValues(t, 1, loads.Load(), "the lease was renewed: no second load")
	assert.Zero(t, wrong.Load())
}

// refreshIdle reports whether no background refresh of s is running.
func refreshIdle(s *Store) bool {
	idle := true
	s.refreshing.Range(func(any, any) bool { idle = false; return false })
	return idle
}
