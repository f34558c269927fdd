package queue_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// Every write whose reply is lost after the server ran it, and which
// go-redis then resends, reports its first outcome: a fresh job is never
// ErrDuplicate, an ack never ErrLeaseLost, a delete never ErrNotFound, and
// nothing is done twice. On all three backends (the proxy fronts every
// cluster node).
func TestReplayedWritesReportTheFirstOutcome(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	q, err := queue.New[execution](pc, "replay", queue.WithNamespace(e.NS), queue.WithBackoff(queue.ConstantBackoff(time.Hour)))
	require.NoError(t, err)
	lost := int64(0)
	lose := func(match string) {
		t.Helper()
		p.LoseReply(match)
		lost++
	}
	check := func() {
		t.Helper()
		require.Equal(t, lost, p.Lost(), "the armed reply was lost")
		require.Zero(t, p.Pending())
	}

	lose("job-enq-1")
	id, err := q.Enqueue(ctx, execution{WorkflowID: "w1"}, queue.WithID("job-enq-1"))
	require.NoError(t, err, "a resent enqueue is not a duplicate")
	require.Equal(t, "job-enq-1", id)
	check()
	lose("generated-id-payload")
	_, err = q.Enqueue(ctx, execution{WorkflowID: "generated-id-payload"})
	require.NoError(t, err)
	check()
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), s.TotalEnqueued, "each job enqueued once")
	require.Equal(t, int64(2), s.Pending())

	// A dequeue resent after its reply was lost gets the same job back,
	// not a second one (which would sit leased until its lease ran out).
	lose(":inbox")
	j1, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	check()
	j2, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	require.NotEqual(t, j1.ID, j2.ID)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)

	lose(j1.ID)
	require.NoError(t, q.Extend(ctx, j1), "a resent extend")
	check()
	lose(j1.ID)
	require.NoError(t, q.Ack(ctx, j1), "a resent ack is not a lost lease")
	check()
	require.ErrorIs(t, q.Ack(ctx, j1), queue.ErrLeaseLost, "a second ack (a new request) is refused")
	lose(j2.ID)
	require.NoError(t, q.Release(ctx, j2))
	check()
	j2, err = q.TryDequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, j2.RetryCount, "released once, no attempt counted")

	_, err = q.Enqueue(ctx, execution{}, queue.WithID("job-nack"), queue.WithJobMaxRetries(0))
	require.NoError(t, err)
	jn, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	lose("job-nack")
	dead, err := q.Nack(ctx, jn, errors.New("boom"))
	require.NoError(t, err)
	require.True(t, dead)
	check()
	lose("job-nack")
	require.NoError(t, q.Requeue(ctx, "job-nack"), "a resent requeue is not ErrNotFound")
	check()
	lose("job-nack")
	require.NoError(t, q.Delete(ctx, "job-nack"), "a resent delete is not ErrNotFound")
	check()

	for i := 0; i < 3; i++ {
		_, err = q.Enqueue(ctx, execution{}, queue.WithID(fmt.Sprint("pg", i)))
		require.NoError(t, err)
	}
	lose("pending")
	n, err := q.Purge(ctx, queue.Pending, 2)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	check()

	s, err = q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.TotalProcessed)
	assert.Equal(t, int64(1), s.TotalFailed, "the nack counted once")
	assert.Equal(t, int64(1), s.TotalDead)
	assert.Equal(t, int64(1), s.Pending(), "3 enqueued, 2 purged, nothing more")
	assert.Equal(t, int64(1), s.InFlight, "j2")
	assert.Equal(t, int64(0), s.Dead)
}

// Many writes, each with its reply lost: not one misreported outcome.
func TestReplayedEnqueueAndAckUnderLoss(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	q, err := queue.New[execution](pc, "replay-many", queue.WithNamespace(e.NS))
	require.NoError(t, err)
	const n = 100
	misreported := 0
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("loss-%03d", i)
		p.LoseReply(id)
		if _, err := q.Enqueue(ctx, execution{WorkflowID: id}, queue.WithID(id)); err != nil {
			require.ErrorIs(t, err, queue.ErrDuplicate, "only a misreport is tolerated here, to be counted")
			misreported++
		}
	}
	for i := 0; i < n; i++ {
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		p.LoseReply(j.ID)
		if err := q.Ack(ctx, j); err != nil {
			require.ErrorIs(t, err, queue.ErrLeaseLost)
			misreported++
		}
	}
	require.Equal(t, int64(2*n), p.Lost())
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	t.Logf("%s: %d replies lost, %d outcomes misreported", e.Backend, p.Lost(), misreported)
	assert.Zero(t, misreported)
	assert.Equal(t, int64(n), s.TotalEnqueued)
	assert.Equal(t, int64(n), s.TotalProcessed)
	assert.Equal(t, int64(0), s.Pending()+s.InFlight+s.Dead)
}

// A network failure or a timeout is never reported as a business answer.
func TestOutagesAreNotOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "outage")
	_, err := q.Enqueue(ctx, execution{}, queue.WithID("held"))
	require.NoError(t, err)
	held, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	pc, p := e.ProxyClient(nil)
	pq, err := queue.New[execution](pc, "outage", queue.WithNamespace(e.NS))
	require.NoError(t, err)
	_, err = pq.Stats(ctx) // connect first
	require.NoError(t, err)
	p.Stall()
	defer p.Resume()
	sentinels := []error{queue.ErrEmpty, queue.ErrDuplicate, queue.ErrNotFound, queue.ErrLeaseLost}
	calls := map[string]func() error{
		"enqueue":     func() error { _, err := pq.Enqueue(timeout(ctx), execution{}, queue.WithID("held")); return err },
		"try dequeue": func() error { _, err := pq.TryDequeue(timeout(ctx)); return err },
		"dequeue":     func() error { _, err := pq.Dequeue(timeout(ctx)); return err },
		"ack":         func() error { return pq.Ack(timeout(ctx), held) },
		"delete":      func() error { return pq.Delete(timeout(ctx), "nope") },
		"requeue":     func() error { return pq.Requeue(timeout(ctx), "nope") },
		"peek":        func() error { _, err := pq.Peek(timeout(ctx), "nope"); return err },
	}
	for name, call := range calls {
		err := call()
		require.Error(t, err, name)
		for _, s := range sentinels {
			assert.NotErrorIs(t, err, s, "%s: %v", name, err)
		}
	}
}

// A batch is one pipeline: when its reply is lost after the server ran
// it, go-redis sends the whole pipeline again. Every item reports its
// first outcome (enqueued once, a true duplicate still ErrDuplicate), on
// all three backends.
func TestReplayedBatchReportsTheFirstOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	q, err := queue.New[execution](pc, "replay-batch", queue.WithNamespace(e.NS))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("taken"))
	require.NoError(t, err)
	items := []queue.Item[execution]{{Options: []queue.EnqueueOption{queue.WithID("taken")}}}
	for i := 0; i < 20; i++ {
		items = append(items, queue.Item[execution]{Payload: execution{WorkflowID: fmt.Sprint("w", i)}, Options: []queue.EnqueueOption{queue.WithID(fmt.Sprint("batch-", i))}})
	}
	p.LoseReply("batch-19") // the last item: the whole pipeline has reached the server
	ids, err := q.EnqueueBatch(ctx, items)
	require.Equal(t, int64(1), p.Lost(), "the pipeline's reply was lost")
	var be *queue.BatchError
	require.ErrorAs(t, err, &be)
	require.ErrorIs(t, be.Errs[0], queue.ErrDuplicate, "a true duplicate stays one")
	for i := 1; i < len(items); i++ {
		require.NoError(t, be.Errs[i], "item %d: a resent pipeline is not a duplicate", i)
		require.Equal(t, fmt.Sprint("batch-", i-1), ids[i])
	}
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(21), s.TotalEnqueued, "each job enqueued once")
	assert.Equal(t, int64(21), s.Pending())
}

// Enqueue calls made at once share pipelines (auto-pipelining): when the
// reply of one is lost, go-redis sends its whole pipeline again, and
// every call in it reports its first outcome: no ErrDuplicate, each job
// enqueued once. On all three backends.
func TestReplayedSharedPipelineReportsTheFirstOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	q, err := queue.New[execution](pc, "replay-shared", queue.WithNamespace(e.NS))
	require.NoError(t, err)
	const producers, each = 16, 20
	p.LoseReply("ap-7-10")
	errs := make(chan error, producers*each)
	var wg sync.WaitGroup
	for g := 0; g < producers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithID(fmt.Sprintf("ap-%d-%d", g, i)))
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "a resent shared pipeline is not a duplicate")
	}
	require.Equal(t, int64(1), p.Lost(), "the armed reply was lost")
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(producers*each), s.TotalEnqueued, "each job enqueued once")
	assert.Equal(t, int64(producers*each), s.Pending())
}

// WithPipelining takes 0 (off) to MaxPipelines round trips in flight.
func TestPipeliningBounds(t *testing.T) {
	for _, n := range []int{-1, queue.MaxPipelines + 1} {
		_, err := queue.New[int](redisNop(), "p", queue.WithPipelining(n))
		assert.ErrorIs(t, err, queue.ErrInvalid, "%d", n)
	}
	for _, n := range []int{0, 1, queue.MaxPipelines} {
		_, err := queue.New[int](redisNop(), "p", queue.WithPipelining(n))
		assert.NoError(t, err, "%d", n)
	}
}

// WithoutReplayMemo: a resent enqueue of a generated ID (alone, delayed,
// or in a batch) finds its own job, reports it enqueued and adds nothing,
// and writes no memo; an enqueue WithID keeps its memo (its resend is
// not ErrDuplicate, a second call is). With and without events, on all
// three backends.
func TestReplayWithoutMemo(t *testing.T) {
	for _, events := range []int{0, 100} {
		t.Run(fmt.Sprint("events=", events), func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			pc, p := e.ProxyClient(nil)
			opts := []queue.Option{queue.WithNamespace(e.NS), queue.WithoutReplayMemo()}
			if events > 0 {
				opts = append(opts, queue.WithEvents(events))
			}
			q, err := queue.New[execution](pc, "bare", opts...)
			require.NoError(t, err)
			lose := func(match string) {
				t.Helper()
				p.LoseReply(match)
			}

			lose("bare-now")
			id, err := q.Enqueue(ctx, execution{WorkflowID: "bare-now"})
			require.NoError(t, err, "a resent enqueue of a generated ID is not a duplicate")
			lose("bare-delayed")
			_, err = q.Enqueue(ctx, execution{WorkflowID: "bare-delayed"}, queue.WithDelay(time.Hour))
			require.NoError(t, err)
			lose("bare-batch")
			ids, err := q.EnqueueBatch(ctx, []queue.Item[execution]{{Payload: execution{WorkflowID: "bare-batch"}}, {Payload: execution{WorkflowID: "bare-batch"}}})
			require.NoError(t, err)
			require.Len(t, ids, 2)
			require.Equal(t, int64(3), p.Lost(), "the armed replies were lost")
			for _, k := range e.Keys() {
				require.NotContains(t, k, ":reply:", "no memo for a generated ID")
			}

			lose("bare-custom")
			_, err = q.Enqueue(ctx, execution{}, queue.WithID("bare-custom"))
			require.NoError(t, err, "a resend WithID is not a duplicate")
			require.Equal(t, int64(4), p.Lost())
			_, err = q.Enqueue(ctx, execution{}, queue.WithID("bare-custom"))
			require.ErrorIs(t, err, queue.ErrDuplicate, "a second call WithID is")
			require.Zero(t, p.Pending())

			s, err := q.Stats(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(5), s.TotalEnqueued, "each job enqueued once")
			assert.Equal(t, int64(4), s.Pending())
			assert.Equal(t, int64(1), s.Delayed[queue.Normal], "bare-delayed")
			j, err := q.Peek(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, "bare-now", j.Payload.WorkflowID)
			if events > 0 {
				evs, err := q.ReadEvents(ctx, "", 100, 0)
				require.NoError(t, err)
				assert.Len(t, evs, 5, "one enqueued event per job")
			}
		})
	}
}

// go-redis v9's default retry schedule can resend a request about 2 min
// 8 s after its first run. An Enqueue resent 2.5 minutes later, after
// its job was run and acked meanwhile, is still recognised by its reply
// memo (replayWindow): reported enqueued, and not enqueued again (with a
// one-minute memo the resend found no memo and no live job, and the job
// ran twice). On miniredis, whose clock the test moves.
func TestEnqueueResentAfterTwoAndAHalfMinutesIsRecognised(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	require.Greater(t, queue.ReplayWindow, 150*time.Second)
	q, obs, p, gate := resendableProducer(t, e, "late")

	p.LoseReply("job-late")
	res := make(chan error, 1)
	go func() {
		_, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithID("job-late"))
		res <- err
	}()
	gate.Between(t, func() {
		e.Advance(150 * time.Second) // skips on real backends
		j, err := obs.TryDequeue(ctx)
		require.NoError(t, err)
		require.Equal(t, "job-late", j.ID)
		require.NoError(t, obs.Ack(ctx, j))
	})
	require.NoError(t, <-res, "the resend reports the first outcome")
	require.EqualValues(t, 1, p.Lost())
	s, err := obs.Stats(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, s.TotalEnqueued, "the warm-up, and this job once")
	assert.Zero(t, s.Pending(), "not enqueued again by the resend")
	_, err = obs.TryDequeue(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty)
}

// resendableProducer returns a producer of queue name through a fault
// proxy whose resends the gate holds, with its script already loaded (the
// lost enqueue is then one EVALSHA), and an observer of the same queue
// on the test's own client.
func resendableProducer(t *testing.T, e *harness.Env, name string) (*queue.Queue[execution], *queue.Queue[execution], *harness.Proxy, *harness.ResendGate) {
	t.Helper()
	pc, p := e.ProxyClient(&redis.Options{PoolSize: 1})
	gate := harness.HoldResends(t, pc, p)
	q, err := queue.New[execution](pc, name, queue.WithNamespace(e.NS))
	require.NoError(t, err)
	obs := newQ(t, e, name)
	_, err = q.Enqueue(e.Ctx(), execution{}, queue.WithID("warm-up"))
	require.NoError(t, err)
	require.NoError(t, obs.Delete(e.Ctx(), "warm-up"))
	return q, obs, p, gate
}
