//go:build chaos

package chaos

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
)

// A slot left MIGRATING/IMPORTING (an interrupted reshard): calls on it
// either go through or fail by their own deadline, never with TRYAGAIN,
// ASK or a business answer; a call made while it lasts succeeds once the
// slot settles.
func TestInterruptedMigration(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tag := "mig-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	slot := keys.Slot("{" + tag + "}")
	src := e.owner(ctx, slot)
	dst := e.otherMaster(ctx, src)
	settle := sync.OnceFunc(func() {
		for _, n := range []node{src, dst} {
			_ = e.admin(n.addr).Do(context.Background(), "CLUSTER", "SETSLOT", slot, "STABLE").Err()
		}
	})
	t.Cleanup(settle)
	require.NoError(t, e.admin(dst.addr).Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", src.id).Err())
	require.NoError(t, e.admin(src.addr).Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst.id).Err())
	t.Logf("slot %d left migrating from %s to %s", slot, fmtNode(src), fmtNode(dst))

	locks, err := lock.New(e.client, lock.WithNamespace(e.ns))
	require.NoError(t, err)
	limits, err := ratelimit.New(e.client, ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerHour(100)}}, ratelimit.WithNamespace(e.ns))
	require.NoError(t, err)
	q, err := queue.New[string](e.client, tag, queue.WithNamespace(e.ns))
	require.NoError(t, err)
	calls := map[string]func(ctx context.Context) error{
		"lock": func(ctx context.Context) error {
			l, err := locks.TryAcquire(ctx, "doc", tag, time.Second)
			if err == nil {
				err = l.Release(ctx)
			}
			return err
		},
		"ratelimit": func(ctx context.Context) error { _, err := limits.Allow(ctx, tag); return err },
		"enqueue":   func(ctx context.Context) error { _, err := q.Enqueue(ctx, "job"); return err },
	}
	for name, call := range calls {
		short, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
		err := call(short)
		cancel()
		if err != nil {
			assert.ErrorIs(t, err, context.DeadlineExceeded, "%s during the migration: %v", name, err)
			assert.NotErrorIs(t, err, lock.ErrNotObtained)
			assert.NotErrorIs(t, err, queue.ErrDuplicate)
		}
		t.Logf("%s while migrating: %v", name, err)
	}
	// Calls made now succeed once the slot settles.
	time.AfterFunc(600*time.Millisecond, settle)
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			long, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			assert.NoError(t, call(long), name)
		}()
	}
	wg.Wait()
}

// Slots move, with their keys, under traffic concentrated on them: no
// over-admission, no two lock holders at once, no lost job, and the
// errors reaching callers (each call with a 5 s deadline) are counted.
func TestReshardUnderLoad(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nodes := e.nodes(ctx)
	var src node
	for _, n := range nodes {
		if n.master && len(n.slots) > 0 {
			src = n
			break
		}
	}
	dst := e.otherMaster(ctx, src)
	first := src.slots[0][0]
	const moved = 256
	// Entities whose keys live in the slots about to move, and filler keys
	// there so that the move takes a while.
	var tags []string
	for s := first; s < first+moved && len(tags) < 24; s += moved / 24 {
		tags = append(tags, tagsInSlot(s, 1, "t"+strconv.Itoa(s)+"-")...)
	}
	pipe := e.client.Pipeline()
	for i := 0; i < 20000; i++ {
		tag := tags[i%len(tags)]
		pipe.Set(ctx, e.ns.Prefix+"filler:{"+tag+"}:"+strconv.Itoa(i), "x", 10*time.Minute)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)

	limits, err := ratelimit.New(e.client, ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerHour(40)}}, ratelimit.WithNamespace(e.ns))
	require.NoError(t, err)
	locks, err := lock.New(e.client, lock.WithNamespace(e.ns))
	require.NoError(t, err)
	q, err := queue.New[int](e.client, tags[0], queue.WithNamespace(e.ns), queue.WithLease(5*time.Second))
	require.NoError(t, err)

	var errs sync.Map // workload -> *atomic.Int64
	count := func(w string, err error) {
		if err == nil {
			return
		}
		v, _ := errs.LoadOrStore(w, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		t.Logf("%s: %v", w, err)
	}
	call := func(f func(ctx context.Context) error) error {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return f(c)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	admitted := make([]atomic.Int64, len(tags))
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := i % len(tags)
				var res ratelimit.Result
				err := call(func(c context.Context) (err error) { res, err = limits.Allow(c, tags[k]); return })
				count("ratelimit", err)
				if err == nil && res.Allowed {
					admitted[k].Add(1)
				}
			}
		}()
	}
	holders := make([]atomic.Int32, 4)
	var lockMu sync.Mutex
	lastFence := make([]int64, 4)
	var overlaps, regressions atomic.Int64
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := i % len(holders)
				var l *lock.Lock
				err := call(func(c context.Context) (err error) {
					l, err = locks.TryAcquire(c, "doc", tags[r], 3*time.Second)
					return
				})
				if errors.Is(err, lock.ErrNotObtained) {
					time.Sleep(time.Millisecond)
					continue
				}
				count("lock", err)
				if err != nil {
					continue
				}
				if holders[r].Add(1) > 1 {
					overlaps.Add(1)
				}
				lockMu.Lock()
				if l.Fence() <= lastFence[r] {
					regressions.Add(1)
				}
				lastFence[r] = l.Fence()
				lockMu.Unlock()
				time.Sleep(time.Millisecond)
				holders[r].Add(-1)
				count("lock", call(l.Release))
			}
		}()
	}
	const jobs = 400
	var enqueued atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < jobs; i++ {
			_, err := q.Enqueue(ctx, i, queue.WithID("job-"+strconv.Itoa(i)))
			for err != nil && !errors.Is(err, queue.ErrDuplicate) {
				count("enqueue", err)
				_, err = q.Enqueue(ctx, i, queue.WithID("job-"+strconv.Itoa(i)))
			}
			enqueued.Add(1)
		}
	}()
	var seen sync.Map
	var processed atomic.Int64
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() {
		runDone <- q.Run(runCtx, func(ctx context.Context, j *queue.Job[int]) error {
			if _, dup := seen.LoadOrStore(j.Payload, true); !dup {
				processed.Add(1)
			}
			return nil
		}, 4)
	}()

	time.Sleep(300 * time.Millisecond) // traffic first
	start := time.Now()
	out, err := exec.CommandContext(ctx, "redis-cli", "--cluster", "reshard", src.addr,
		"--cluster-from", src.id, "--cluster-to", dst.id, "--cluster-slots", strconv.Itoa(moved),
		"--cluster-yes", "--cluster-pipeline", "50").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("moved %d slots (%d..) from %s to %s in %v", moved, first, fmtNode(src), fmtNode(dst), time.Since(start))
	time.Sleep(500 * time.Millisecond) // traffic after
	close(stop)
	deadline := time.Now().Add(30 * time.Second)
	for processed.Load() < jobs && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stopRun()
	<-runDone
	wg.Wait()

	for k := range tags {
		assert.LessOrEqual(t, admitted[k].Load(), int64(40), "over-admission for %s", tags[k])
	}
	assert.Zero(t, overlaps.Load(), "two lock holders at once")
	assert.Zero(t, regressions.Load(), "a fencing token went backwards")
	assert.EqualValues(t, jobs, processed.Load(), "every job processed")
	total := int64(0)
	errs.Range(func(k, v any) bool {
		n := v.(*atomic.Int64).Load()
		total += n
		t.Logf("errors reaching callers during the reshard: %s %d", k, n)
		return true
	})
	assert.Zero(t, total, "errors reaching callers (each call had a 5 s deadline)")
}
