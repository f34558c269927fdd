package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// ticker keeps a miniredis clock moving (its TIME is frozen otherwise), so
// leases can expire while workers run. On real backends it does nothing.
func ticker(t *testing.T, e *harness.Env, step time.Duration) {
	if e.Mini == nil {
		return
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
			case <-time.After(20 * time.Millisecond):
				e.Advance(step)
			}
		}
	}()
	t.Cleanup(func() { close(done); wg.Wait() })
}

func enqueueN(t *testing.T, q *queue.Queue[execution], ctx context.Context, n int) []string {
	t.Helper()
	var ids []string
	for start := 0; start < n; start += 1000 {
		items := make([]queue.Item[execution], min(1000, n-start))
		for i := range items {
			id := fmt.Sprintf("job-%05d", start+i)
			items[i] = queue.Item[execution]{Payload: execution{WorkflowID: id}, Options: []queue.EnqueueOption{queue.WithID(id)}}
		}
		got, err := q.EnqueueBatch(ctx, items)
		require.NoError(t, err)
		ids = append(ids, got...)
	}
	return ids
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunEveryJobExactlyOnce(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	n := 10000
	if !e.Real() {
		n = 2000 // miniredis runs Lua in an interpreter; the real servers take the full load
	}
	q := newQ(t, e, "bulk")
	ids := enqueueN(t, q, ctx, n)
	var mu sync.Mutex
	seen := make(map[string]int, n)
	var done atomic.Int64
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ { // 8 workers, as 8 processes would run them
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
				if j.Payload.WorkflowID != j.ID {
					return errors.New("payload mismatch")
				}
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				done.Add(1)
				return nil
			}, 4))
		}()
	}
	waitFor(t, 40*time.Second, func() bool {
		s, err := q.Stats(ctx)
		require.NoError(t, err)
		return s.TotalProcessed == int64(n)
	})
	cancel()
	wg.Wait()
	assert.Equal(t, int64(n), done.Load())
	for _, id := range ids {
		assert.Equal(t, 1, seen[id], id)
	}
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(n), s.TotalEnqueued)
	assert.Equal(t, int64(n), s.TotalProcessed)
	assert.Equal(t, int64(0), s.TotalFailed)
	assert.Equal(t, int64(0), s.Pending()+s.InFlight+s.Dead)
	e.RequireTTLs(persistent)
}

func TestRunRetriesPanicsAndDeadLetters(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "failing", queue.WithBackoff(queue.ConstantBackoff(0)))
	const n = 60
	for i := 0; i < n; i++ {
		_, err := q.Enqueue(ctx, execution{WorkflowID: fmt.Sprint(i % 3)}, queue.WithID(fmt.Sprint(i)), queue.WithJobMaxRetries(2))
		require.NoError(t, err)
	}
	// kind 0: succeeds; kind 1: fails twice then succeeds; kind 2: always
	// panics -> dead after 3 attempts.
	var mu sync.Mutex
	attempts := map[string]int{}
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			mu.Lock()
			attempts[j.ID]++
			a := attempts[j.ID]
			mu.Unlock()
			switch j.Payload.WorkflowID {
			case "1":
				if a < 3 {
					return errors.New("transient")
				}
			case "2":
				panic("handler bug")
			}
			return nil
		}, 8)
	}()
	waitFor(t, 20*time.Second, func() bool {
		s, err := q.Stats(ctx)
		require.NoError(t, err)
		return s.TotalProcessed+s.TotalDead == n
	})
	cancel()
	require.NoError(t, <-errc)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(40), s.TotalProcessed)
	assert.Equal(t, int64(20), s.TotalDead)
	assert.Equal(t, int64(20*2+20*3), s.TotalFailed)
	assert.Equal(t, int64(20), s.Dead)
	dead, err := q.List(ctx, queue.Dead, 0, 100)
	require.NoError(t, err)
	require.Len(t, dead, 20)
	for _, d := range dead {
		assert.Equal(t, "2", d.Payload.WorkflowID)
		assert.Contains(t, d.LastError, "panic: handler bug")
		assert.Equal(t, 3, attempts[d.ID])
	}
}

func TestRunGracefulShutdown(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "graceful", queue.WithShutdownGrace(5*time.Second))
	enqueueN(t, q, ctx, 10)
	started := make(chan string, 10)
	release := make(chan struct{})
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			started <- j.ID
			<-release
			return nil
		}, 2)
	}()
	<-started
	<-started
	// Stop taking jobs: the two running finish, the rest go back. No wait
	// is needed before the release: a worker checks Run's context before
	// it starts a fetched job, and cancel has returned.
	cancel()
	close(release)
	require.NoError(t, <-errc)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.TotalProcessed)
	assert.Equal(t, int64(0), s.TotalFailed, "released jobs are not failures")
	assert.Equal(t, int64(8), s.Pending())
	assert.Equal(t, int64(0), s.InFlight)
}

func TestRunShutdownGraceCancelsAndReleases(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "grace", queue.WithShutdownGrace(100*time.Millisecond))
	enqueueN(t, q, ctx, 1)
	started := make(chan struct{})
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			close(started)
			<-ctx.Done()
			assert.ErrorIs(t, context.Cause(ctx), queue.ErrShutdown)
			return ctx.Err()
		}, 1)
	}()
	<-started
	cancel()
	require.NoError(t, <-errc)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Pending(), "released, ready for the next worker")
	assert.Equal(t, int64(0), s.TotalFailed)
}

func TestRunExtendsLeaseOfLongJob(t *testing.T) {
	// The lease is long enough that Run's local timer (a whole lease with
	// no extension) cannot fire on a busy machine; the server clock is
	// moved by the test, each step short of the lease's end, and the next
	// step waits for Run's extension to show on the server.
	const lease = 1500 * time.Millisecond
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "long", queue.WithLease(lease))
	id := enqueueN(t, q, ctx, 1)[0]
	var runs atomic.Int64
	release := make(chan struct{})
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			runs.Add(1)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, 1)
	}()
	deadline := func() time.Time {
		in, err := q.Peek(ctx, id)
		if err != nil || in.State != queue.Active {
			return time.Time{}
		}
		return in.At
	}
	harness.WaitFor(t, "the job to run", func() bool { return runs.Load() == 1 && !deadline().IsZero() })
	// A second consumer must not get the job while it runs, over more
	// than 3 leases of server time.
	other := newQ(t, e, "long", queue.WithLease(lease))
	begin := e.Now()
	for e.Now().Sub(begin) <= 3*lease {
		d := deadline()
		require.False(t, d.IsZero(), "the job is still leased")
		if step := d.Sub(e.Now()) - 200*time.Millisecond; step > 0 {
			e.Advance(step) // still inside the lease (sleeps on real servers)
		}
		_, err := other.TryDequeue(ctx)
		require.ErrorIs(t, err, queue.ErrEmpty)
		harness.WaitFor(t, "the lease to be extended", func() bool { return deadline().After(d) })
	}
	close(release)
	harness.WaitFor(t, "the ack", func() bool {
		s, err := q.Stats(ctx)
		return err == nil && s.TotalProcessed == 1
	})
	cancel()
	require.NoError(t, <-errc)
	assert.Equal(t, int64(1), runs.Load())
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), s.TotalFailed)
}

func TestRunLostLeaseCancelsHandler(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "lost", queue.WithLease(300*time.Millisecond))
	id := enqueueN(t, q, ctx, 1)[0]
	got := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			<-ctx.Done()
			got <- context.Cause(ctx)
			return ctx.Err()
		}, 1)
	}()
	waitFor(t, 5*time.Second, func() bool {
		info, err := q.Peek(ctx, id)
		return err == nil && info.State == queue.Active
	})
	require.NoError(t, q.Delete(ctx, id)) // an operator removes the running job
	if e.Mini != nil {
		ticker(t, e, 20*time.Millisecond)
	}
	select {
	case err := <-got:
		assert.ErrorIs(t, err, queue.ErrLeaseLost)
	case <-time.After(5 * time.Second):
		t.Fatal("handler context not cancelled")
	}
}

func TestFaultProxyLosesNoJob(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const n = 300
	q := newQ(t, e, "faulty", queue.WithLease(400*time.Millisecond), queue.WithMaxRetries(1000))
	ids := enqueueN(t, q, ctx, n)
	pc, proxy := e.ProxyClient(nil)
	pq, err := queue.New[execution](pc, "faulty", queue.WithNamespace(e.NS), queue.WithLease(400*time.Millisecond))
	require.NoError(t, err)
	ticker(t, e, 20*time.Millisecond)

	var mu sync.Mutex
	seen := map[string]int{}
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- pq.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			mu.Lock()
			seen[j.ID]++
			mu.Unlock()
			time.Sleep(time.Millisecond)
			return nil
		}, 4)
	}()
	// Cut every connection again and again, mid dequeue and mid ack.
	stop := make(chan struct{})
	var cw sync.WaitGroup
	cw.Add(1)
	go func() {
		defer cw.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(60 * time.Millisecond):
			}
			if i%2 == 0 {
				proxy.CutNow()
			} else {
				proxy.CutAfter(int64(40 + i%200)) // inside the next request
			}
		}
	}()
	waitFor(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
	close(stop)
	cw.Wait()
	proxy.CutAfter(-1)
	// With the connection healthy again every job reaches a final state.
	waitFor(t, 30*time.Second, func() bool {
		s, err := q.Stats(ctx)
		require.NoError(t, err)
		return s.TotalProcessed == n
	})
	cancel()
	require.NoError(t, <-errc)
	assert.Greater(t, proxy.Cuts(), int64(0))
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), s.Pending()+s.InFlight+s.Dead+s.Delayed[queue.Normal], "no job left behind")
	for _, id := range ids {
		assert.GreaterOrEqual(t, seen[id], 1, id)
	}
	t.Logf("cuts %d, deliveries %d for %d jobs, failed attempts (expired leases) %d", proxy.Cuts(), sum(seen), n, s.TotalFailed)
}

func sum(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}

func TestManyConsumersNoDoubleDelivery(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "contended")
	n := 2000
	if !e.Real() {
		n = 300 // miniredis serialises every call
	}
	enqueueN(t, q, ctx, n)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for g := 0; g < 100; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, err := q.TryDequeue(ctx)
				if errors.Is(err, queue.ErrEmpty) {
					return
				}
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				if !assert.NoError(t, q.Ack(ctx, j)) {
					return
				}
			}
		}()
	}
	wg.Wait()
	assert.Len(t, seen, n)
	for id, c := range seen {
		assert.Equal(t, 1, c, id)
	}
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(n), s.TotalProcessed)
	assert.Equal(t, int64(0), s.Pending()+s.InFlight)
}

// With Redis unreachable the lease cannot be extended: the handler's
// context must end (cause ErrLeaseLost) once the lease has run out on the
// local clock, since another consumer may take the job from then on.
func TestRunUnreachableRedisCancelsHandlerAtLeaseEnd(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "unreach", queue.WithLease(400*time.Millisecond), queue.WithBackoff(queue.ConstantBackoff(0)))
	enqueueN(t, q, ctx, 1)
	pc, proxy := e.ProxyClient(nil)
	pq, err := queue.New[execution](pc, "unreach", queue.WithNamespace(e.NS), queue.WithLease(400*time.Millisecond), queue.WithBackoff(queue.ConstantBackoff(0)))
	require.NoError(t, err)

	started := make(chan struct{})
	cause := make(chan error, 1)
	var runs atomic.Int64
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- pq.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			if runs.Add(1) > 1 {
				return nil
			}
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		}, 1)
	}()
	<-started
	proxy.Stall()
	// No bound on how soon: a busy machine may run the local lease timer
	// late. The cause (ErrLeaseLost, with Redis still unreachable) is what
	// tells the lease end from anything else.
	select {
	case err := <-cause:
		assert.ErrorIs(t, err, queue.ErrLeaseLost)
	case <-time.After(10 * time.Second):
		proxy.Resume()
		t.Fatal("handler still running with its lease gone")
	}
	proxy.Resume()
	// The job is not lost: it runs again and is acked, and the failed
	// attempt is counted once (by the runner's settle or by lease recovery,
	// whichever comes first).
	if e.Mini != nil {
		ticker(t, e, 20*time.Millisecond)
	}
	waitFor(t, 15*time.Second, func() bool {
		s, err := q.Stats(ctx)
		require.NoError(t, err)
		return s.TotalProcessed == 1
	})
	cancel()
	require.NoError(t, <-errc)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.TotalFailed)
	assert.Equal(t, int64(0), s.Pending()+s.InFlight+s.Dead)
	assert.Equal(t, int64(2), runs.Load())
}

// A handler that ignores its cancelled context after the shutdown grace
// does not keep its job: Run stops extending the lease, and the job goes
// to another consumer once the lease runs out.
func TestRunStopsExtendingAfterGrace(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "stubborn", queue.WithLease(300*time.Millisecond), queue.WithShutdownGrace(50*time.Millisecond))
	id := enqueueN(t, q, ctx, 1)[0]
	started, unblock := make(chan struct{}), make(chan struct{})
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			close(started)
			<-unblock // ignores ctx
			return nil
		}, 1)
	}()
	<-started
	cancel()
	ticker(t, e, 20*time.Millisecond)
	other := newQ(t, e, "stubborn")
	var j *queue.Job[execution]
	waitFor(t, 5*time.Second, func() bool {
		var err error
		j, err = other.TryDequeue(ctx)
		if errors.Is(err, queue.ErrEmpty) {
			return false
		}
		require.NoError(t, err)
		return true
	})
	assert.Equal(t, id, j.ID)
	select {
	case <-errc:
		t.Fatal("Run returned while a handler still runs")
	default:
	}
	require.NoError(t, other.Ack(ctx, j))
	close(unblock)
	require.NoError(t, <-errc)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.TotalProcessed, "the stubborn handler's late ack is not counted")
	assert.Equal(t, int64(1), s.TotalFailed, "the expired lease")
	assert.Equal(t, int64(0), s.Pending()+s.InFlight)
}

// logCapture is a slog.Handler that keeps the records of one queue.
type logCapture struct {
	queue string
	mu    sync.Mutex
	recs  []slog.Record
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCapture) WithGroup(string) slog.Handler            { return c }
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	mine := false
	r.Attrs(func(a slog.Attr) bool {
		mine = mine || (a.Key == "queue" && a.Value.String() == c.queue)
		return true
	})
	if mine {
		c.mu.Lock()
		c.recs = append(c.recs, r.Clone())
		c.mu.Unlock()
	}
	return nil
}

func (c *logCapture) records() []slog.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]slog.Record(nil), c.recs...)
}

// captureSlog makes c the default slog handler for the test.
func captureSlog(t *testing.T, c slog.Handler) {
	old, w, flags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(c))
	t.Cleanup(func() {
		slog.SetDefault(old)
		log.SetOutput(w) // SetDefault sent the log package's output to c
		log.SetFlags(flags)
	})
}

// deadClient is a client of an address nothing listens on.
func deadClient(t *testing.T) redis.UniversalClient {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Without WithErrorHandler, the errors Run survives (here: Redis
// unreachable) are logged with slog's default logger, at level Error with
// the queue's name; WithErrorHandler receives them instead, and nothing
// is logged.
func TestRunLogsErrors(t *testing.T) {
	ctx := context.Background()
	run := func(q *queue.Queue[execution]) {
		rctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { errc <- q.Run(rctx, func(context.Context, *queue.Job[execution]) error { return nil }, 1) }()
		t.Cleanup(func() {
			cancel()
			require.NoError(t, <-errc)
		})
	}

	logged := &logCapture{queue: "logged-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	handled := &logCapture{queue: "handled-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	captureSlog(t, multiCapture{logged, handled})

	q, err := queue.New[execution](deadClient(t), logged.queue)
	require.NoError(t, err)
	run(q)
	harness.WaitFor(t, "an error logged", func() bool { return len(logged.records()) > 0 })
	rec := logged.records()[0]
	assert.Equal(t, slog.LevelError, rec.Level)
	assert.Equal(t, "queue: worker error", rec.Message)
	var errAttr error
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			errAttr, _ = a.Value.Any().(error)
		}
		return true
	})
	require.Error(t, errAttr)

	var got atomic.Int64
	hq, err := queue.New[execution](deadClient(t), handled.queue, queue.WithErrorHandler(func(error) { got.Add(1) }))
	require.NoError(t, err)
	run(hq)
	harness.WaitFor(t, "an error handled", func() bool { return got.Load() > 0 })
	assert.Empty(t, handled.records(), "the handler replaces the log")
}

// multiCapture sends each record to every capture.
type multiCapture []*logCapture

func (m multiCapture) Enabled(context.Context, slog.Level) bool { return true }
func (m multiCapture) WithAttrs([]slog.Attr) slog.Handler       { return m }
func (m multiCapture) WithGroup(string) slog.Handler            { return m }
func (m multiCapture) Handle(ctx context.Context, r slog.Record) error {
	for _, c := range m {
		_ = c.Handle(ctx, r)
	}
	return nil
}
