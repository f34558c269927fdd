package lock

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func newClient(t *testing.T, e *harness.Env, opts ...Option) *Client {
	t.Helper()
	c, err := New(e.Client, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	followServerClock(e, c)
	return c
}

// followServerClock makes c's lease deadlines follow the simulated server
// clock on miniredis (where harness Advance moves TIME without time
// passing), as they follow real time on a real server.
func followServerClock(e *harness.Env, c *Client) {
	if e.Mini == nil {
		return
	}
	base, real := e.Now(), time.Now()
	c.now = func() time.Time { return real.Add(time.Since(real) + e.Now().Sub(base)) }
}

func TestDocTable(t *testing.T) { harness.CheckDocTable(t, Schema()) }

func TestKeysShareSlotAndDoNotCollide(t *testing.T) {
	for _, ns := range []keys.Namespace{{}, {Prefix: "ha:"}, {NoHashTags: true}} {
		var all []string
		for _, r := range [][2]string{{"file", "42"}, {"queue", "file"}, {"fence", "x"}, {"user-session", "u:1"}, {"rw", "x"}, {"readers", "x"}, {"writers", "x"}} {
			ks := []string{}
			for _, tm := range []*keys.Template{lockKey, fenceKey, queueKey, waitersKey, semKey, rwKey, readersKey, writersKey} {
				k, err := tm.Key(ns, r[0], r[1])
				require.NoError(t, err)
				ks = append(ks, k)
			}
			if !ns.NoHashTags {
				require.True(t, keys.SameSlot(ks...), "%v", ks)
			}
			all = append(all, ks...)
		}
		ck, err := cronKey.Key(ns, "unread-reminder")
		require.NoError(t, err)
		lk, _ := lockKey.Key(ns, CronResource, "unread-reminder")
		fk, _ := fenceKey.Key(ns, CronResource, "unread-reminder")
		if !ns.NoHashTags {
			require.True(t, keys.SameSlot(ck, lk, fk))
		} else {
			require.Equal(t, "cron:last-run:unread-reminder", ck, "byte-identical to seed 004")
		}
		all = append(all, ck, lk, fk)
		seen := map[string]bool{}
		for _, k := range all {
			require.False(t, seen[k], "duplicate key %q", k)
			seen[k] = true
		}
	}
	// The registered defaults are the generic lock key of their type.
	for typ, tm := range resourceDefaults {
		a, err := tm.Key(keys.Namespace{}, "7")
		require.NoError(t, err)
		b, err := lockKey.Key(keys.Namespace{}, typ, "7")
		require.NoError(t, err)
		require.Equal(t, b, a)
	}
}

func TestNewOptions(t *testing.T) {
	e := harness.New(t)
	for name, opts := range map[string][]Option{
		"bad namespace":    {WithNamespace(keys.Namespace{Prefix: "a{b"})},
		"max ttl zero":     {WithMaxTTL(0)},
		"fence below max":  {WithFenceTTL(time.Second)},
		"owner with colon": {WithOwner("a:b")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(e.Client, opts...)
			require.Error(t, err)
		})
	}
	_, err := New(nil)
	require.ErrorIs(t, err, ErrInvalid)
	c := newClient(t, e, WithMaxTTL(time.Minute))
	require.Equal(t, 60*time.Second, c.DefaultTTL(File))
	require.Equal(t, time.Minute, c.DefaultTTL(Workflow), "capped at max")
	require.Equal(t, 5*time.Second, c.DefaultTTL(UserSession))
	require.Equal(t, 10*time.Second, c.DefaultTTL(Cache))
	require.Equal(t, StandardTTL, c.DefaultTTL("anything"))
	require.Equal(t, 300*time.Second, newClient(t, e).DefaultTTL(Workflow))
}

func TestBadInputWritesNothing(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e, WithMaxTTL(10*time.Second), WithFenceTTL(time.Minute))
	ctx := e.Ctx()
	cases := []struct {
		name     string
		typ, id  string
		ttl      time.Duration
		isKeyErr bool
	}{
		{"empty type", "", "1", time.Second, true},
		{"empty id", "file", "", time.Second, true},
		{"oversize id", "file", strings.Repeat("x", 1025), time.Second, true},
		{"zero ttl", "file", "1", 0, false},
		{"negative ttl", "file", "1", -time.Second, false},
		{"ttl above max", "file", "1", 11 * time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.TryAcquire(ctx, tc.typ, tc.id, tc.ttl)
			require.ErrorIs(t, err, ErrInvalid)
			if tc.isKeyErr {
				require.ErrorIs(t, err, keys.ErrInvalid)
			}
			_, err = c.Acquire(ctx, tc.typ, tc.id, tc.ttl, WithFairness(0))
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
	_, err := c.Acquire(ctx, "file", "1", time.Second, WithRetry(nil))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.Semaphore("file", "1", 0)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.Interval("", time.Second, 0)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.Interval("job", 0, 0)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.Interval("job", time.Second, time.Hour)
	require.ErrorIs(t, err, ErrInvalid)
	require.Empty(t, e.Keys())
}

func TestTryAcquireReleaseAndValue(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e, WithOwner("worker-1"))
	ctx := e.Ctx()

	l, err := c.TryAcquire(ctx, File, "report.pdf", 2*time.Second)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(l.Token(), "worker-1."))
	require.Positive(t, l.Fence())
	want, err := lockKey.Key(e.NS, File, "report.pdf")
	require.NoError(t, err)
	require.Equal(t, want, l.Key())

	// Value: {owner_id}:{timestamp}:{ttl}, as seed 001 documents.
	v, err := e.Client.Get(ctx, l.Key()).Result()
	require.NoError(t, err)
	parts := strings.Split(v, ":")
	require.Len(t, parts, 3)
	require.Equal(t, l.Token(), parts[0])
	ts, err := strconv.ParseInt(parts[1], 10, 64)
	require.NoError(t, err)
	require.InDelta(t, e.Now().UnixMilli(), ts, 5000)
	require.Equal(t, "2000", parts[2])

	_, err = c.TryAcquire(ctx, File, "report.pdf", time.Second)
	require.ErrorIs(t, err, ErrNotObtained)

	ttl, err := l.TTL(ctx)
	require.NoError(t, err)
	require.Greater(t, ttl, time.Second)
	require.LessOrEqual(t, ttl, 2*time.Second)

	require.NoError(t, l.Refresh(ctx, 3*time.Second))
	ttl, err = l.TTL(ctx)
	require.NoError(t, err)
	require.Greater(t, ttl, 2*time.Second)
	v, _ = e.Client.Get(ctx, l.Key()).Result()
	require.True(t, strings.HasSuffix(v, ":3000"), v)

	require.NoError(t, l.Release(ctx))
	require.ErrorIs(t, l.Release(ctx), ErrNotHeld)
	_, err = l.TTL(ctx)
	require.ErrorIs(t, err, ErrNotHeld)
	<-l.Context().Done()
	require.ErrorIs(t, context.Cause(l.Context()), context.Canceled)
	require.ErrorIs(t, l.Refresh(ctx, time.Second), ErrLockLost)

	l2, err := c.TryAcquire(ctx, File, "report.pdf", time.Second)
	require.NoError(t, err)
	require.Greater(t, l2.Fence(), l.Fence())
	require.NoError(t, l2.Release(ctx))
	require.Empty(t, strings.Join(filter(e.Keys(), ":fence:", false), ","), "only the fence key remains")
}

func filter(ks []string, sub string, keep bool) []string {
	var out []string
	for _, k := range ks {
		if strings.Contains(k, sub) == keep {
			out = append(out, k)
		}
	}
	return out
}

func TestNonOwnerCannotReleaseOrRefresh(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	l1, err := c.TryAcquire(ctx, "doc", "1", 500*time.Millisecond)
	require.NoError(t, err)
	e.Advance(600 * time.Millisecond)
	l2, err := c.TryAcquire(ctx, "doc", "1", 5*time.Second)
	require.NoError(t, err)
	require.Greater(t, l2.Fence(), l1.Fence())

	require.ErrorIs(t, l1.Refresh(ctx, time.Second), ErrNotHeld)
	require.ErrorIs(t, l1.Release(ctx), ErrNotHeld)
	_, err = l1.TTL(ctx)
	require.ErrorIs(t, err, ErrNotHeld)
	ttl, err := l2.TTL(ctx)
	require.NoError(t, err, "l2 untouched by l1")
	require.Greater(t, ttl, 4*time.Second)
	require.NoError(t, l2.Release(ctx))
}

func TestFenceSurvivesDeleteAndExpiry(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e, WithMaxTTL(time.Second), WithFenceTTL(time.Second))
	ctx := e.Ctx()
	fk, err := fenceKey.Key(e.NS, "doc", "f")
	require.NoError(t, err)
	var last int64
	take := func() {
		t.Helper()
		l, err := c.TryAcquire(ctx, "doc", "f", 100*time.Millisecond)
		require.NoError(t, err)
		require.Greater(t, l.Fence(), last)
		last = l.Fence()
		require.NoError(t, l.Release(ctx))
	}
	for range 5 {
		take()
	}
	pttl, err := e.Client.PTTL(ctx, fk).Result()
	require.NoError(t, err)
	require.Positive(t, pttl, "the fence key has a TTL")
	e.Advance(time.Millisecond) // server time moves on between acquisitions
	require.NoError(t, e.Client.Del(ctx, fk).Err())
	take()
	take()
	e.Advance(1100 * time.Millisecond)
	n, err := e.Client.Exists(ctx, fk).Result()
	require.NoError(t, err)
	require.Zero(t, n, "fence key expired")
	take()

	require.NoError(t, e.Client.Set(ctx, fk, "not-a-number", time.Minute).Err())
	_, err = c.TryAcquire(ctx, "doc", "f", 100*time.Millisecond)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	require.Contains(t, err.Error(), fk)
}

func TestAcquireWaitsAndTimesOut(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	l, err := c.TryAcquire(ctx, "doc", "w", 5*time.Second)
	require.NoError(t, err)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = c.Acquire(short, "doc", "w", time.Second, WithRetry(LinearBackoff(10*time.Millisecond)))
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	_, err = c.Acquire(ctx, "doc", "w", time.Second, WithRetry(LimitRetry(LinearBackoff(time.Millisecond), 3)))
	require.ErrorIs(t, err, ErrNotObtained)
	_, err = c.Acquire(ctx, "doc", "w", time.Second, WithRetry(NoRetry()))
	require.ErrorIs(t, err, ErrNotObtained)

	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = l.Release(context.Background())
	}()
	l2, err := c.Acquire(ctx, "doc", "w", time.Second)
	require.NoError(t, err)
	require.NoError(t, l2.Release(ctx))
}

func TestRetryStrategies(t *testing.T) {
	require.Negative(t, NoRetry().Backoff(0))
	require.Equal(t, 5*time.Millisecond, LinearBackoff(5*time.Millisecond).Backoff(7))
	require.Equal(t, time.Millisecond, LinearBackoff(time.Microsecond).Backoff(0))
	require.Negative(t, LinearBackoff(0).Backoff(0), "refused by Acquire; never a spin")
	x := ExponentialBackoff(8*time.Millisecond, 64*time.Millisecond)
	for attempt, hi := range []time.Duration{8, 16, 32, 64, 64, 64} {
		hi *= time.Millisecond
		for range 50 {
			d := x.Backoff(attempt)
			require.GreaterOrEqual(t, d, hi/2)
			require.LessOrEqual(t, d, hi)
		}
	}
	// hi below lo is raised to lo: every wait is in [lo/2, lo].
	for attempt := range 5 {
		d := ExponentialBackoff(time.Second, time.Millisecond).Backoff(attempt)
		require.GreaterOrEqual(t, d, 500*time.Millisecond)
		require.LessOrEqual(t, d, time.Second)
	}
	require.LessOrEqual(t, x.Backoff(1000), 64*time.Millisecond)
	// Large waits and many attempts must not overflow into a negative
	// wait (which would panic in the jitter) or stop the retries.
	for _, b := range []RetryStrategy{ExponentialBackoff(20*time.Second, time.Minute), ExponentialBackoff(time.Hour, math.MaxInt64)} {
		for _, attempt := range []int{22, 29, 30, 63, 64, 1 << 20} {
			d := b.Backoff(attempt)
			require.Positive(t, d, "attempt %d", attempt)
		}
	}
	require.GreaterOrEqual(t, ExponentialBackoff(20*time.Second, time.Minute).Backoff(29), 30*time.Second)
	lim := LimitRetry(LinearBackoff(time.Millisecond), 2)
	require.Equal(t, time.Millisecond, lim.Backoff(1))
	require.Negative(t, lim.Backoff(2))
}

// detector proves mutual exclusion in-process: enter fails if another
// holder is inside.
type detector struct {
	in      atomic.Int32
	overlap atomic.Int32
	mu      sync.Mutex
	fences  []int64
}

func (d *detector) enter(fence int64) {
	if d.in.Add(1) != 1 {
		d.overlap.Add(1)
	}
	d.mu.Lock()
	d.fences = append(d.fences, fence)
	d.mu.Unlock()
}

func (d *detector) leave() { d.in.Add(-1) }

func TestContention100Goroutines(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	fk, err := fenceKey.Key(e.NS, "doc", "hot")
	require.NoError(t, err)
	var d detector
	var wg sync.WaitGroup
	var done atomic.Int32
	const n = 100
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.Acquire(ctx, "doc", "hot", 5*time.Second, WithRetry(LinearBackoff(2*time.Millisecond)))
			if err != nil {
				t.Error(err)
				return
			}
			d.enter(l.Fence())
			if done.Add(1) == n/2 {
				// Halfway, the fence key vanishes (eviction, an operator):
				// tokens must keep increasing. Server time moves on first.
				if e.Mini != nil {
					e.Advance(time.Millisecond)
				}
				if err := e.Client.Del(ctx, fk).Err(); err != nil {
					t.Error(err)
				}
			}
			time.Sleep(100 * time.Microsecond)
			d.leave()
			if err := l.Release(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	require.Zero(t, d.overlap.Load(), "two holders overlapped")
	require.Len(t, d.fences, n)
	for i := 1; i < len(d.fences); i++ {
		require.Greater(t, d.fences[i], d.fences[i-1], "fence %d not increasing", i)
	}
	e.RequireTTLs(nil)
}

func TestTryAcquireOneWinner(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.TryAcquire(ctx, "doc", "race", 5*time.Second)
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, ErrNotObtained):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, wins.Load())
}

func TestWatchdogKeepsLeaseAlive(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	ctx := e.Ctx()
	l, err := c.TryAcquire(ctx, "doc", "wd", 600*time.Millisecond, WithWatchdog(50*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(900 * time.Millisecond)
	require.NoError(t, l.Context().Err(), "lease kept alive by the watchdog")
	ttl, err := l.TTL(ctx)
	require.NoError(t, err)
	require.Positive(t, ttl)
	require.NoError(t, l.Release(ctx))
	require.ErrorIs(t, context.Cause(l.Context()), context.Canceled)
}

func TestLostLockCancelsContextWithinOnePeriod(t *testing.T) {
	for _, how := range []string{"deleted", "stolen"} {
		t.Run(how, func(t *testing.T) {
			e := harness.New(t)
			c := newClient(t, e)
			ctx := e.Ctx()
			const period = 150 * time.Millisecond
			l, err := c.TryAcquire(ctx, "doc", "lost", 3*time.Second, WithWatchdog(period))
			require.NoError(t, err)
			if how == "deleted" {
				require.NoError(t, e.Client.Del(ctx, l.Key()).Err())
			} else {
				require.NoError(t, e.Client.Set(ctx, l.Key(), "intruder:1:3000", 3*time.Second).Err())
			}
			start := time.Now()
			select {
			case <-l.Context().Done():
			case <-time.After(3 * period):
				t.Fatal("context not cancelled")
			}
			require.Less(t, time.Since(start), 2*period)
			require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
			require.ErrorIs(t, l.Refresh(ctx, time.Second), ErrLockLost)
			require.ErrorIs(t, l.Release(ctx), ErrNotHeld)
			if how == "stolen" {
				v, _ := e.Client.Get(ctx, l.Key()).Result()
				require.Equal(t, "intruder:1:3000", v, "release did not delete another owner's lock")
			}
		})
	}
}

func TestContextCancelledWhenLeaseRunsOut(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	l, err := c.TryAcquire(e.Ctx(), "doc", "short", 150*time.Millisecond)
	require.NoError(t, err)
	select {
	case <-l.Context().Done():
	case <-time.After(time.Second):
		t.Fatal("context not cancelled at the lease's end")
	}
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
}

func TestFaultyConnection(t *testing.T) {
	e := harness.New(t)
	pc, p := e.ProxyClient(&redis.Options{ContextTimeoutEnabled: true})
	c, err := New(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	ctx := e.Ctx()
	l, err := c.TryAcquire(ctx, "doc", "net", 2*time.Second, WithWatchdog(50*time.Millisecond))
	require.NoError(t, err)
	p.Stall()
	t0 := time.Now()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = c.Acquire(short, "doc", "other", time.Second)
	cancel()
	require.Error(t, err)
	t.Log(time.Since(t0), err)
	p.Resume()
	p.CutNow()
	// The watchdog survives a cut connection (go-redis redials).
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, context.Cause(l.Context()))
	require.NoError(t, l.Release(ctx))
}

func TestStalledNetworkLosesLeaseLocally(t *testing.T) {
	e := harness.New(t)
	pc, p := e.ProxyClient(&redis.Options{ContextTimeoutEnabled: true})
	c, err := New(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	ctx := e.Ctx()
	l, err := c.TryAcquire(ctx, "doc", "stall", 300*time.Millisecond, WithWatchdog(50*time.Millisecond))
	require.NoError(t, err)
	p.Stall()
	select {
	case <-l.Context().Done():
	case <-time.After(2 * time.Second):
		t.Fatal("context not cancelled while refreshes could not get through")
	}
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	p.Resume()
	require.ErrorIs(t, l.Refresh(ctx, time.Second), ErrNotHeld)
}
