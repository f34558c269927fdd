package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// gauge counts running handlers in Redis, across processes: INCR on
// start (keeping the highest value seen), DECR on end.
var gauge = redis.NewScript(`
local v = redis.call('INCR', KEYS[1])
if v > tonumber(redis.call('GET', KEYS[2]) or '0') then
  redis.call('SET', KEYS[2], v)
end
return v`)

// holdUntil waits, for at most 10 s, until the gauge's peak key reaches
// n: a handler that holds its place until then lets the cap be reached
// however slowly the other handlers start (a handler that only slept a
// little could finish before the last of them started).
func holdUntil(ctx context.Context, c redis.UniversalClient, peak string, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if v, err := c.Get(ctx, peak).Int(); err == nil && v >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// client returns a client of its own (a separate process's).
func client(e *harness.Env) redis.UniversalClient {
	if e.Real() {
		return e.FreshClient()
	}
	c := redis.NewClient(&redis.Options{Addr: e.Addr, ContextTimeoutEnabled: true})
	e.T.Cleanup(func() { _ = c.Close() })
	return c
}

// TestGlobalConcurrency: 4 independent Queue instances (separate
// clients) × 8 workers, a global cap of 5: never more than 5 handlers run
// at once, counted in Redis; the cap is reached.
func TestGlobalConcurrency(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const jobs = 80
	running, peak := e.NS.Prefix+"{gauge}:running", e.NS.Prefix+"{gauge}:peak"
	p := newQ(t, e, "gc", queue.WithGlobalConcurrency(5))
	for i := 0; i < jobs; i++ {
		_, err := p.Enqueue(ctx, execution{WorkflowID: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	var done atomic.Int64
	var errs []error
	var mu sync.Mutex
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		c := client(e)
		q, err := queue.New[execution](c, "gc", queue.WithNamespace(e.NS), queue.WithGlobalConcurrency(5),
			queue.WithErrorHandler(func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }))
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
				if err := gauge.Run(ctx, c, []string{running, peak}).Err(); err != nil {
					return err
				}
				// Hold until the cap has been reached once, rather than
				// for a fixed time a busy machine may not honour.
				holdUntil(ctx, c, peak, 5)
				defer done.Add(1)
				return c.Decr(ctx, running).Err()
			}, 8)
		}()
	}
	harness.WaitFor(t, "every job processed", func() bool { return done.Load() >= jobs })
	stop()
	wg.Wait()
	require.Empty(t, errs)
	top, err := e.Client.Get(ctx, peak).Int()
	require.NoError(t, err)
	require.Equal(t, 5, top, "most handlers running at once")
	s, err := p.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, jobs, s.TotalProcessed)
	require.EqualValues(t, 0, s.InFlight)
}

// TestGlobalConcurrencyFreesPlaces: an ack, a release and an expired lease
// (a crashed worker's) each free a place; nothing else does.
func TestGlobalConcurrencyFreesPlaces(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "gcf", queue.WithGlobalConcurrency(2), queue.WithLease(200*time.Millisecond))
	for i := 0; i < 6; i++ {
		_, err := q.Enqueue(ctx, execution{WorkflowID: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	a, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	b, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	require.NoError(t, q.Ack(ctx, a))
	c, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	require.NoError(t, q.Release(ctx, b))
	_, err = q.TryDequeue(ctx)
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	// c and d are never settled: their worker crashed
	_ = c
	e.Advance(250 * time.Millisecond)
	x, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	y, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	require.NoError(t, q.Ack(ctx, x))
	require.NoError(t, q.Ack(ctx, y))
}

// TestRateLimit: a queue's rate holds per fixed window of the server
// clock, exactly.
func TestRateLimit(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	if e.Real() {
		// windows of real time: covered exactly by TestGroupRateOverTime
		// on every backend; here only that a window's worth goes at once
		q := newQ(t, e, "rl", queue.WithRateLimit(3, time.Hour))
		for i := 0; i < 5; i++ {
			_, err := q.Enqueue(ctx, execution{})
			require.NoError(t, err)
		}
		got := 0
		for {
			_, err := q.TryDequeue(ctx)
			if errors.Is(err, queue.ErrEmpty) {
				break
			}
			require.NoError(t, err)
			got++
		}
		require.LessOrEqual(t, got, 3)
		require.GreaterOrEqual(t, got, 1)
		return
	}
	e.Advance(time.Duration(1000-e.Now().UnixMilli()%1000) * time.Millisecond) // the start of a window
	q := newQ(t, e, "rl", queue.WithRateLimit(3, time.Second))
	for i := 0; i < 10; i++ {
		_, err := q.Enqueue(ctx, execution{})
		require.NoError(t, err)
	}
	for w := 0; w < 4; w++ {
		want := min(3, 10-3*w)
		for k := 0; k < want; k++ {
			j, err := q.TryDequeue(ctx)
			require.NoError(t, err, "window %d, job %d", w, k)
			require.NoError(t, q.Ack(ctx, j))
		}
		_, err := q.TryDequeue(ctx)
		require.ErrorIs(t, err, queue.ErrEmpty, "window %d", w)
		e.Advance(999 * time.Millisecond)
		_, err = q.TryDequeue(ctx)
		require.ErrorIs(t, err, queue.ErrEmpty, "window %d, its last ms", w)
		e.Advance(time.Millisecond)
	}
}

// TestGroupSkipAndRoundRobin: a group at its limit is skipped, its jobs
// keeping their place; one dequeue takes the groups in turn.
func TestGroupSkipAndRoundRobin(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "grr", queue.WithGroupLimits(queue.GroupLimit{Concurrency: 2}),
		queue.WithGroupLimit("vip", queue.GroupLimit{}))
	enq := func(g string) string {
		opts := []queue.EnqueueOption{}
		if g != "" {
			opts = append(opts, queue.WithGroup(g))
		}
		id, err := q.Enqueue(ctx, execution{WorkflowID: g}, opts...)
		require.NoError(t, err)
		return id
	}
	a1, a2, a3, b1 := enq("a"), enq("a"), enq("a"), enq("b")
	next := func() *queue.Job[execution] {
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		return j
	}
	j1, j2, j3 := next(), next(), next()
	require.Equal(t, []string{a1, b1, a2}, []string{j1.ID, j2.ID, j3.ID}) // the groups in turn
	require.Equal(t, "a", j1.Group)
	_, err := q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	require.NoError(t, q.Ack(ctx, j1))
	require.Equal(t, a3, next().ID)
	// ungrouped jobs and a group with its own (no) limits are not held
	for i := 0; i < 3; i++ {
		enq("")
		enq("vip")
	}
	for i := 0; i < 6; i++ {
		next()
	}
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)

	_, err = q.Enqueue(ctx, execution{}, queue.WithGroup("no spaces"))
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = queue.New[execution](e.Client, "x", queue.WithGroupLimit("a:b", queue.GroupLimit{}))
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = queue.New[execution](e.Client, "x", queue.WithRateLimit(1, 0))
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = queue.New[execution](e.Client, "x", queue.WithGlobalConcurrency(-1))
	require.ErrorIs(t, err, queue.ErrInvalid)

	// round-robin within one batch: Run's fetch takes a, b, c, a, b, c...
	r := newQ(t, e, "grr2", queue.WithGroupLimits(queue.GroupLimit{Concurrency: 100}))
	var order []string
	for _, g := range []string{"a", "a", "a", "b", "b", "b", "c", "c", "c"} {
		_, err := r.Enqueue(ctx, execution{WorkflowID: g}, queue.WithGroup(g))
		require.NoError(t, err)
	}
	var mu sync.Mutex
	rctx, stop := context.WithCancel(ctx)
	go func() {
		harness.WaitFor(t, "9 jobs", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 9 })
		stop()
	}()
	require.NoError(t, r.Run(rctx, func(_ context.Context, j *queue.Job[execution]) error {
		mu.Lock()
		order = append(order, j.Group)
		mu.Unlock()
		return nil
	}, 1)) // one worker: jobs run in the order they were fetched
	require.Equal(t, []string{"a", "b", "c", "a", "b", "c", "a", "b", "c"}, order)
}

// TestGroupRateOverTime: per-group rates hold exactly in every window of
// the server clock (the started events' times) while 8 workers run; and a
// saturated group does not starve another.
func TestGroupRateOverTime(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const per = 100 * time.Millisecond
	// The longest lease: the clock below runs 8 times as fast as real
	// time, and a busy machine must not see a lease expire (a second
	// started event) before Run settles it.
	q := newQ(t, e, "grt", queue.WithEvents(100000), queue.WithLease(queue.MaxLease),
		queue.WithGroupLimits(queue.GroupLimit{Rate: queue.Rate{N: 3, Per: per}}),
		queue.WithGroupLimit("b", queue.GroupLimit{Concurrency: 2, Rate: queue.Rate{N: 5, Per: per}}))
	const each = 24
	for _, g := range []string{"a", "b"} {
		for i := 0; i < each; i++ {
			_, err := q.Enqueue(ctx, execution{WorkflowID: g}, queue.WithGroup(g))
			require.NoError(t, err)
		}
	}
	var done atomic.Int64
	rctx, stop := context.WithCancel(ctx)
	if !e.Real() {
		// the frozen clock moves a window every few ms
		go func() {
			for rctx.Err() == nil {
				time.Sleep(3 * time.Millisecond)
				e.Advance(per / 4)
			}
		}()
	}
	go func() {
		harness.WaitFor(t, "every job", func() bool { return done.Load() == 2*each })
		stop()
	}()
	require.NoError(t, q.Run(rctx, func(_ context.Context, j *queue.Job[execution]) error {
		done.Add(1)
		return nil
	}, 8))
	evs, _ := readAllG(t, q)
	perWin := map[string]map[int64]int{"a": {}, "b": {}}
	groupOf := map[string]string{}
	for _, ev := range evs {
		if ev.Kind == queue.EventEnqueued {
			groupOf[ev.JobID] = map[bool]string{true: "a", false: "b"}[len(groupOf) < each]
		}
	}
	started := 0
	for _, ev := range evs {
		if ev.Kind == queue.EventStarted {
			started++
			perWin[groupOf[ev.JobID]][ev.At.UnixMilli()/per.Milliseconds()]++
		}
	}
	require.Equal(t, 2*each, started)
	for g, lim := range map[string]int{"a": 3, "b": 5} {
		total := 0
		for w, n := range perWin[g] {
			require.LessOrEqual(t, n, lim, "group %s, window %d", g, w)
			total += n
		}
		require.Equal(t, each, total)
	}
}

func readAllG(t *testing.T, q *queue.Queue[execution]) ([]queue.Event, string) {
	t.Helper()
	var out []queue.Event
	after := ""
	for {
		evs, err := q.ReadEvents(context.Background(), after, 1000, 0)
		require.NoError(t, err)
		if len(evs) == 0 {
			return out, after
		}
		out = append(out, evs...)
		after = evs[len(evs)-1].ID
	}
}

// TestGroupFairness: a group saturated at its cap with many jobs queued
// first does not hold back another group's jobs behind them.
func TestGroupFairness(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "gfair", queue.WithGroupLimits(queue.GroupLimit{Concurrency: 1}))
	items := make([]queue.Item[execution], 0, 205)
	for i := 0; i < 200; i++ {
		items = append(items, queue.Item[execution]{Payload: execution{WorkflowID: "big"}, Options: []queue.EnqueueOption{queue.WithGroup("big")}})
	}
	for i := 0; i < 5; i++ {
		items = append(items, queue.Item[execution]{Payload: execution{WorkflowID: "small"}, Options: []queue.EnqueueOption{queue.WithGroup("small")}})
	}
	_, err := q.EnqueueBatch(ctx, items)
	require.NoError(t, err)
	var mu sync.Mutex
	bigDone, smallDone, bigAtSmallEnd := 0, 0, -1
	var cur atomic.Int64
	rctx, stop := context.WithCancel(ctx)
	go func() {
		harness.WaitFor(t, "the small group", func() bool { mu.Lock(); defer mu.Unlock(); return smallDone == 5 })
		stop()
	}()
	require.NoError(t, q.Run(rctx, func(_ context.Context, j *queue.Job[execution]) error {
		if cur.Add(1) > 2 {
			t.Errorf("more than one job per group at once")
		}
		time.Sleep(time.Millisecond)
		cur.Add(-1)
		mu.Lock()
		defer mu.Unlock()
		if j.Group == "big" {
			bigDone++
		} else if smallDone++; smallDone == 5 {
			bigAtSmallEnd = bigDone
		}
		return nil
	}, 8))
	require.GreaterOrEqual(t, bigAtSmallEnd, 0)
	require.Less(t, bigAtSmallEnd, 20, "big jobs done before the 5 small ones")
}

// TestLimitKeysCorrupt: a limit key the package did not write is deleted
// (its count starts again) and reported, naming the key; dequeues go on.
func TestLimitKeysCorrupt(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "lkc", queue.WithRateLimit(10, time.Hour), queue.WithGroupLimits(queue.GroupLimit{Concurrency: 1, Rate: queue.Rate{N: 5, Per: time.Hour}}))
	rate := e.NS.Prefix + "queue:{lkc}:rate"
	hset(e, rate)
	_, err := q.TryDequeue(ctx)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	require.ErrorContains(t, err, rate)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)

	ga, gr := e.NS.Prefix+"queue:{lkc}:gactive:a", e.NS.Prefix+"queue:{lkc}:grate:a"
	set(e, ga)
	require.NoError(t, e.Client.Set(ctx, gr, "garbage", time.Minute).Err())
	_, err = q.Enqueue(ctx, execution{}, queue.WithGroup("a"))
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx) // leased, the keys repaired
	require.NoError(t, err)
	require.Equal(t, "a", j.Group)
	n, err := e.Client.ZCard(ctx, ga).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	v, err := e.Client.Get(ctx, gr).Result()
	require.NoError(t, err)
	require.Regexp(t, `^\d+,1$`, v)
}

// TestNoLimitsNoLimitKeys: without limits, grouped jobs run as any other
// and no script writes a limit key or the round-robin cursor; the
// settle of a batch pushes no wake-up token.
func TestNoLimitsNoLimitKeys(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "nolim")
	for i := 0; i < 5; i++ {
		_, err := q.Enqueue(ctx, execution{}, queue.WithGroup("g"))
		require.NoError(t, err)
	}
	var js []*queue.Job[execution]
	for i := 0; i < 5; i++ {
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		require.Equal(t, "g", j.Group)
		js = append(js, j)
	}
	wake := e.NS.Prefix + "queue:{nolim}:executions"
	require.NoError(t, e.Client.Del(ctx, wake).Err())
	for _, j := range js {
		require.NoError(t, q.Ack(ctx, j))
	}
	n, err := e.Client.Exists(ctx, wake).Result()
	require.NoError(t, err)
	require.Zero(t, n, "no wake-up token")
	for _, k := range e.Keys() {
		require.NotRegexp(t, `:(rate|gactive:g|grate:g)$`, k)
	}
	rr, err := e.Client.HExists(ctx, e.NS.Prefix+"queue:stats:{nolim}", "group_rr").Result()
	require.NoError(t, err)
	require.False(t, rr)

	// with limits, the same acks wake a consumer
	l := newQ(t, e, "lim", queue.WithGlobalConcurrency(1))
	_, err = l.Enqueue(ctx, execution{})
	require.NoError(t, err)
	j, err := l.TryDequeue(ctx)
	require.NoError(t, err)
	lw := e.NS.Prefix + "queue:{lim}:executions"
	require.NoError(t, e.Client.Del(ctx, lw).Err())
	require.NoError(t, l.Ack(ctx, j))
	n, err = e.Client.LLen(ctx, lw).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "a wake-up token")
}

// TestGroupConcurrencyAcrossInstances: 3 independent instances × 8
// workers, 3 groups capped at 2 each: never more than 2 handlers of a
// group at once, counted in Redis, and each group reaches its cap.
func TestGroupConcurrencyAcrossInstances(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	groups := []string{"a", "b", "c"}
	const each = 20
	opt := queue.WithGroupLimits(queue.GroupLimit{Concurrency: 2})
	p := newQ(t, e, "gca", opt)
	for i := 0; i < each; i++ {
		for _, g := range groups {
			_, err := p.Enqueue(ctx, execution{WorkflowID: g}, queue.WithGroup(g))
			require.NoError(t, err)
		}
	}
	key := func(g, what string) string { return e.NS.Prefix + "{gauge}:" + g + ":" + what }
	var done atomic.Int64
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		c := client(e)
		q, err := queue.New[execution](c, "gca", queue.WithNamespace(e.NS), opt)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
				if err := gauge.Run(ctx, c, []string{key(j.Group, "running"), key(j.Group, "peak")}).Err(); err != nil {
					return err
				}
				holdUntil(ctx, c, key(j.Group, "peak"), 2) // the group's cap reached once
				defer done.Add(1)
				return c.Decr(ctx, key(j.Group, "running")).Err()
			}, 8)
		}()
	}
	harness.WaitFor(t, "every job processed", func() bool { return done.Load() >= int64(each*len(groups)) })
	stop()
	wg.Wait()
	for _, g := range groups {
		top, err := e.Client.Get(ctx, key(g, "peak")).Int()
		require.NoError(t, err)
		require.Equal(t, 2, top, "group %s: most handlers at once", g)
	}
}

// TestGroupOfPayloadWithGroupKey: a payload whose last key is "group"
// does not pass for the job's group: the envelope's own field decides,
// for a grouped job (held at its group's limit) and an ungrouped one
// (never held).
func TestGroupOfPayloadWithGroupKey(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q, err := queue.New[map[string]string](e.Client, "gkey", queue.WithNamespace(e.NS),
		queue.WithGroupLimits(queue.GroupLimit{Concurrency: 1}))
	require.NoError(t, err)
	fake := map[string]string{"a": "1", "group": "real"}
	for i := 0; i < 2; i++ {
		_, err := q.Enqueue(ctx, fake, queue.WithGroup("real"))
		require.NoError(t, err)
		_, err = q.Enqueue(ctx, fake)
		require.NoError(t, err)
	}
	groups := map[string]int{}
	for i := 0; i < 3; i++ {
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		groups[j.Group]++
	}
	require.Equal(t, map[string]int{"real": 1, "": 2}, groups)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty, "the second job of group real waits for the first")
}

// TestGroupSeenList: a whole read of the ready jobs (here a dequeue that
// finds only a full group's) records the groups it found in the stats
// hash (group_seen, "ms|g1,g2"); a value the package did not write there
// is ignored and written again, never an error.
func TestGroupSeenList(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "gseen", queue.WithGroupLimits(queue.GroupLimit{Concurrency: 1}))
	stats := e.NS.Prefix + "queue:stats:{gseen}"
	for _, g := range []string{"a", "b", "a"} {
		_, err := q.Enqueue(ctx, execution{}, queue.WithGroup(g))
		require.NoError(t, err)
	}
	var groups []string
	for i := 0; i < 2; i++ {
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		groups = append(groups, j.Group)
	}
	require.Equal(t, []string{"a", "b"}, groups)
	require.NoError(t, e.Client.HSet(ctx, stats, "group_seen", "not|a list!").Err())
	_, err := q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty, "a's second job waits for its first")
	v, err := e.Client.HGet(ctx, stats, "group_seen").Result()
	require.NoError(t, err)
	require.Regexp(t, `^\d{13}\|a$`, v)
}

// Within one millisecond, a dequeue that the global cap holds to no job
// does not reorder the jobs enqueued around it: FIFO within a priority
// holds (the idle step moves the enqueue sequence back only when a job
// could be taken).
func TestFIFOAcrossAHeldDequeue(t *testing.T) {
	e := harness.New(t)
	if e.Mini == nil {
		t.Skip("needs one frozen millisecond: the miniredis tier")
	}
	ctx := e.Ctx()
	q := newQ(t, e, "held", queue.WithGlobalConcurrency(1))
	_, err := q.Enqueue(ctx, execution{}, queue.WithID("x"))
	require.NoError(t, err)
	x, err := q.TryDequeue(ctx) // in flight: the cap is reached
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("a"))
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty, "held back by the cap")
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("b"))
	require.NoError(t, err)
	require.NoError(t, q.Ack(ctx, x))
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", j.ID, "first in, first out")
}
