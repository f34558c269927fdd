package lock

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
)

// Each write whose reply is lost after the server ran it, and which
// go-redis sends again, reports its first outcome: the lease it took, the
// release it made, the permit, the claim.
func TestLostReplyReportsFirstOutcome(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	c, err := New(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	followServerClock(e, c)
	for _, op := range []*call.Op{acquireOp, fairAcquireOp, releaseOp, refreshOp, semAcquireOp, semReleaseOp, intervalClaimOp} {
		require.NoError(t, op.Load(ctx, pc), "EVALSHA must not fall back to EVAL, so the SHA is on the wire")
	}
	lose := p.LoseReply

	t.Run("acquire", func(t *testing.T) {
		for _, fair := range []bool{false, true} {
			var opts []AcquireOption
			h := acquireOp.Script().Hash()
			if fair {
				opts, h = append(opts, WithFairness(0)), fairAcquireOp.Script().Hash()
			}
			id := "acquire-" + strconv.FormatBool(fair)
			lost := p.Lost()
			lose(h)
			l, err := c.TryAcquire(ctx, "doc", id, time.Minute, opts...)
			require.NoError(t, err, "the replay finds its own lease")
			require.Equal(t, lost+1, p.Lost())
			fk, _ := fenceKey.Key(e.NS, "doc", id)
			fence, err := e.Client.Get(ctx, fk).Int64()
			require.NoError(t, err)
			assert.Equal(t, fence, l.Fence(), "the token issued by the first run")

			lose(refreshOp.Script().Hash())
			require.NoError(t, l.Refresh(ctx, time.Minute))
			require.Equal(t, lost+2, p.Lost())

			lose(releaseOp.Script().Hash())
			require.NoError(t, l.Release(ctx), "the replay of a release that deleted the key is a success")
			require.Equal(t, lost+3, p.Lost())
			lk, _ := lockKey.Key(e.NS, "doc", id)
			assert.Zero(t, e.Client.Exists(ctx, lk).Val())
		}
	})

	t.Run("semaphore", func(t *testing.T) {
		s, err := c.Semaphore("gpu", "replay", 2)
		require.NoError(t, err)
		lost := p.Lost()
		lose(semAcquireOp.Script().Hash())
		l, err := s.TryAcquire(ctx, time.Minute)
		require.NoError(t, err)
		require.Equal(t, lost+1, p.Lost())
		n, err := s.Held(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "one permit, not two")
		lose(semReleaseOp.Script().Hash())
		require.NoError(t, l.Release(ctx))
		n, err = s.Held(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
	})

	t.Run("interval", func(t *testing.T) {
		for _, lease := range []time.Duration{0, time.Minute} {
			g, err := c.Interval("replay-"+lease.String(), time.Hour, lease)
			require.NoError(t, err)
			lost := p.Lost()
			lose(intervalClaimOp.Script().Hash())
			run, err := g.Claim(ctx)
			require.NoError(t, err)
			require.Equal(t, lost+1, p.Lost())
			assert.True(t, run.Claimed, "the replay reports the claim, not 'not due'")
			assert.True(t, run.Previous.IsZero(), "the first run has no previous one")
			if lease > 0 {
				require.NotNil(t, run.Lease)
				fence, err := e.Client.Get(ctx, g.keys[2]).Int64()
				require.NoError(t, err)
				assert.Equal(t, fence, run.Lease.Fence())
				require.NoError(t, run.Lease.Release(ctx))
			}
			again, err := g.Claim(ctx)
			require.NoError(t, err)
			assert.False(t, again.Claimed, "one run per interval")
		}
	})
}

// Connections cut every 20 ms under many goroutines, each on a resource
// of its own: no TryAcquire may say ErrNotObtained of a resource nobody
// holds, and no Release within the lease may say ErrNotHeld. Errors on
// the wire are fine; misreported outcomes are not. An attempt that failed
// on the wire may still run on the server later (a command written to a
// connection that was then cut, which miniredis's per-connection
// goroutines can run after commands sent since on other connections) and
// take the lease for nobody: such an orphan is a true "held", and the test
// deletes it as its lease's expiry would.
func TestCutConnectionsNeverMisreport(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(2 * time.Second)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	c, err := New(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	followServerClock(e, c)
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				p.CutNow()
			}
		}
	}()
	var acquired, released, wire, orphans, notObtained, notHeld atomic.Int64
	// clearOrphan lets a late execution of a cut attempt land, then
	// deletes what it left, as the lease's expiry would (miniredis's clock
	// stands still here).
	clearOrphan := func(lk string) {
		time.Sleep(20 * time.Millisecond)
		e.Client.Del(ctx, lk)
	}
	var wg sync.WaitGroup
	deadline := time.Now().Add(1500 * time.Millisecond)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "mine-" + strconv.Itoa(g)
			lk, _ := lockKey.Key(e.NS, "doc", id)
			for time.Now().Before(deadline) {
				l, err := c.TryAcquire(ctx, "doc", id, 30*time.Second) // far beyond a starved goroutine's pause under -race
				switch {
				case errors.Is(err, ErrNotObtained):
					if e.Client.Exists(ctx, lk).Val() == 1 {
						orphans.Add(1) // held, by a late attempt
						clearOrphan(lk)
						continue
					}
					notObtained.Add(1)
					continue
				case err != nil:
					// The attempt may have taken the lease with its reply
					// lost for good: clear what it may have left.
					wire.Add(1)
					clearOrphan(lk)
					continue
				}
				acquired.Add(1)
				err = l.Release(ctx)
				switch {
				case errors.Is(err, ErrNotHeld):
					notHeld.Add(1)
				case err != nil:
					wire.Add(1)
					clearOrphan(lk)
				default:
					released.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	t.Logf("%d acquired, %d released, %d wire errors, %d cuts, %d orphans of cut attempts; misreports: %d not obtained, %d not held",
		acquired.Load(), released.Load(), wire.Load(), p.Cuts(), orphans.Load(), notObtained.Load(), notHeld.Load())
	assert.Positive(t, p.Cuts())
	assert.Positive(t, acquired.Load())
	assert.Zero(t, notObtained.Load(), "a free resource is never ErrNotObtained")
	assert.Zero(t, notHeld.Load(), "a release within the lease is never ErrNotHeld")
}

// batchHook counts the pipelines of more than one command a client sends.
type batchHook struct{ n atomic.Int64 }

func (h *batchHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *batchHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *batchHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 1 {
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// A shared pipeline whose replies are lost after the server ran it is sent
// again whole by go-redis, so every script in it runs twice: each call
// still reports its first outcome. The calls are held behind one lane
// (WithPipelining(1)) while the proxy stalls, so that they go out as one
// pipeline when it resumes; the loss is armed on one resource of the batch.
func TestResentPipelineReportsFirstOutcome(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	h := &batchHook{}
	pc.AddHook(h)
	c, err := New(pc, WithNamespace(e.NS), WithPipelining(1))
	require.NoError(t, err)
	followServerClock(e, c)
	for _, op := range []*call.Op{acquireOp, releaseOp, refreshOp, ttlOp, semAcquireOp, semCountOp} {
		require.NoError(t, op.Load(ctx, pc))
	}
	// Resources whose keys live on one master, so that on a cluster too
	// they share the lane and the pipeline.
	ids := sameMaster(t, e, pc, 16)

	s, err := c.Semaphore("gpu", ids[0], len(ids))
	require.NoError(t, err)

	// batch runs call(i) for every resource behind a read that holds the
	// lane while the proxy stalls, so that the calls queue and leave
	// together once it resumes, in a pipeline whose replies are lost (the
	// first request carrying match).
	batch := func(match string, call func(i int) error) []error {
		t.Helper()
		errs := make([]error, len(ids))
		lost, batches := p.Lost(), h.n.Load()
		p.LoseReply(match)
		p.Stall()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = s.Held(ctx) }()
		time.Sleep(50 * time.Millisecond) // the read holds the lane
		for i := range ids {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = call(i) }()
		}
		time.Sleep(100 * time.Millisecond) // the calls wait in the queue
		p.Resume()
		wg.Wait()
		require.Equal(t, lost+1, p.Lost(), "one pipeline's replies lost")
		require.Greater(t, h.n.Load(), batches, "the calls shared a pipeline")
		return errs
	}

	locks := make([]*Lock, len(ids))
	errs := batch("{"+ids[len(ids)/2]+"}", func(i int) (err error) {
		locks[i], err = c.TryAcquire(ctx, "doc", ids[i], time.Minute)
		return err
	})
	for i, err := range errs {
		require.NoError(t, err, "a resent acquire finds its own lease")
		fk, _ := fenceKey.Key(e.NS, "doc", ids[i])
		fence, err := e.Client.Get(ctx, fk).Int64()
		require.NoError(t, err)
		assert.Equal(t, fence, locks[i].Fence(), "the token of the first run")
	}

	// Refreshes and releases in one pipeline: the even locks refresh, the
	// odd ones release.
	errs = batch("{"+ids[len(ids)/2+1]+"}", func(i int) error {
		if i%2 == 0 {
			return locks[i].Refresh(ctx, 2*time.Minute)
		}
		return locks[i].Release(ctx)
	})
	for i, err := range errs {
		require.NoError(t, err, "a resent refresh extends again, a resent release reports its release")
		n, err := e.Client.Exists(ctx, locks[i].Key()).Result()
		require.NoError(t, err)
		if i%2 == 1 {
			assert.Zero(t, n, "released")
			continue
		}
		assert.EqualValues(t, 1, n)
		ttl, err := locks[i].TTL(ctx)
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Minute, "refreshed")
		require.NoError(t, locks[i].Release(ctx))
	}

	// Permits: a resent acquisition finds its own permit, so the
	// semaphore counts one per caller.
	errs = batch(semAcquireOp.Script().Hash(), func(i int) error {
		_, err := s.TryAcquire(ctx, time.Minute)
		return err
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	held, err := s.Held(ctx)
	require.NoError(t, err)
	assert.Equal(t, len(ids), held, "one permit per caller, not two")
}

// sameMaster returns n resource IDs whose keys a cluster serves from one
// master (any n IDs elsewhere).
func sameMaster(t *testing.T, e *harness.Env, c redis.UniversalClient, n int) []string {
	t.Helper()
	cc, ok := c.(*redis.ClusterClient)
	var ids []string
	var want string
	for i := 0; len(ids) < n; i++ {
		id := "pipe-" + strconv.Itoa(i)
		if ok {
			k, err := lockKey.Key(e.NS, "doc", id)
			require.NoError(t, err)
			m, err := cc.MasterForKey(e.Ctx(), k)
			require.NoError(t, err)
			if want == "" {
				want = m.Options().Addr
			}
			if m.Options().Addr != want {
				continue
			}
		}
		ids = append(ids, id)
	}
	return ids
}
