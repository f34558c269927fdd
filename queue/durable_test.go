package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// The test servers have no replicas, so every durable write is done and
// reported with ErrNotDurable, its result returned with it: the ID of the
// enqueued job, the ack recorded. What is not written (a duplicate, a lost
// lease) keeps its own error. The chaos tier shows the option keeping
// every acknowledged job through failovers (internal/chaos).
func TestDurabilityWithoutReplicas(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "durable", queue.WithDurability(1, 20*time.Millisecond))

	id, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithID("j1"))
	require.ErrorIs(t, err, queue.ErrNotDurable)
	assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged")
	assert.Equal(t, "j1", id, "the ID comes with ErrNotDurable")
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("j1"))
	require.ErrorIs(t, err, queue.ErrDuplicate, "nothing written: a duplicate, not ErrNotDurable")
	assert.NotErrorIs(t, err, queue.ErrNotDurable)

	ids, err := q.EnqueueBatch(ctx, []queue.Item[execution]{{}, {Options: []queue.EnqueueOption{queue.WithID("j1")}}})
	var be *queue.BatchError
	require.ErrorAs(t, err, &be)
	assert.ErrorIs(t, be.Errs[0], queue.ErrNotDurable)
	assert.NotEmpty(t, ids[0], "enqueued")
	assert.ErrorIs(t, be.Errs[1], queue.ErrDuplicate)
	assert.Empty(t, ids[1])

	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.TotalEnqueued)

	j, err := q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrNotDurable)
	require.NotNil(t, j, "the job comes with ErrNotDurable")
	require.ErrorIs(t, q.Ack(ctx, j), queue.ErrNotDurable)
	require.ErrorIs(t, q.Ack(ctx, j), queue.ErrLeaseLost, "the first ack was written")
	s, err = q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.TotalProcessed)

	j, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrNotDurable)
	require.ErrorIs(t, q.Ack(ctx, j), queue.ErrNotDurable)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty, "nothing leased: empty, not ErrNotDurable")
	assert.NotErrorIs(t, err, queue.ErrNotDurable)
}

func TestDurabilityOptionChecked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int
		timeout  time.Duration
	}{
		{"no replica", 0, time.Second},
		{"negative", -1, time.Second},
		{"too many", 65, time.Second},
		{"no timeout", 1, 0},
		{"past the read timeout", 1, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := queue.New[execution](redisNop(), "q", queue.WithDurability(tc.replicas, tc.timeout))
			assert.ErrorIs(t, err, queue.ErrInvalid)
		})
	}
	_, err := queue.New[execution](redisNop(), "q", queue.WithDurability(1, 100*time.Millisecond))
	assert.NoError(t, err)
}

// Run goes on when its writes are not durable: every job runs once and is
// acked, and the handler sees ErrNotDurable through WithErrorHandler.
func TestDurabilityRunWithoutReplicas(t *testing.T) {
	e := harness.New(t)
	var reported atomic.Int64
	q := newQ(t, e, "durable-run", queue.WithDurability(1, 5*time.Millisecond),
		queue.WithErrorHandler(func(err error) {
			if errors.Is(err, queue.ErrNotDurable) {
				reported.Add(1)
			}
		}))
	ctx, cancel := context.WithCancel(e.Ctx())
	defer cancel()
	const n = 5
	for i := range n {
		_, err := q.Enqueue(ctx, execution{}, queue.WithID(fmt.Sprint(i)))
		require.ErrorIs(t, err, queue.ErrNotDurable)
	}
	var ran atomic.Int64
	done := make(chan error, 1)
	go func() {
		done <- q.Run(ctx, func(context.Context, *queue.Job[execution]) error {
			if ran.Add(1) == n {
				cancel()
			}
			return nil
		}, 2)
	}()
	<-done
	harness.WaitFor(t, "acks", func() bool {
		s, err := q.Stats(e.Ctx())
		return err == nil && s.TotalProcessed == n
	})
	assert.EqualValues(t, n, ran.Load())
	assert.Positive(t, reported.Load())
}

// A server that comes back empty (a restart without persistence) while a
// job is in flight can make the job run twice, and this is the
// documented at-least-once behaviour after data loss (docs/queue.md,
// "Restarts that lose data"): the producer's Enqueue lost its reply in
// the restart, go-redis resends it, and the server, which has forgotten
// both the job and the reply memo, enqueues it afresh (nothing on the
// server can tell it from a new request). The first worker is told: its
// Extend and Ack get ErrLeaseLost (Run cancels its handler's context
// with that cause at its next extension).
func TestRestartThatLosesDataCanRunAJobTwice(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	producer, worker, p, gate := resendableProducer(t, e, "restart")

	p.LoseReply("job-restart")
	res := make(chan error, 1)
	go func() {
		_, err := producer.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithID("job-restart"))
		res <- err
	}()
	var first *queue.Job[execution]
	gate.Between(t, func() {
		var err error
		first, err = worker.TryDequeue(ctx) // the job starts
		require.NoError(t, err)
		require.Equal(t, "job-restart", first.ID)
		for _, k := range e.Keys() { // the server restarts empty
			require.NoError(t, e.Client.Del(ctx, k).Err())
		}
		e.Advance(time.Second) // which takes a while
	})
	require.NoError(t, <-res, "the resend enqueued the job afresh")

	second, err := worker.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, "job-restart", second.ID, "the same job runs a second time")
	assert.ErrorIs(t, worker.Extend(ctx, first), queue.ErrLeaseLost, "the first worker is told")
	assert.ErrorIs(t, worker.Ack(ctx, first), queue.ErrLeaseLost)
	require.NoError(t, worker.Ack(ctx, second))
}
