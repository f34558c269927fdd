package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// TestCancelRunningJob: Cancel reaches the handler running the job in
// another Run (another client) through the cancel channel (or the poll
// where sharded pub/sub is missing), not through a lease extension: the
// lease is an hour, so no extension happens during the test. The job
// leaves the queue as cancelled, not retried; the other jobs run on.
func TestCancelRunningJob(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	const workers = 4
	q := newQ(t, e, "cxl", queue.WithLease(time.Hour), queue.WithRetention(time.Hour))
	other, err := queue.New[execution](e.FreshClient(), "cxl", queue.WithNamespace(e.NS), queue.WithLease(time.Hour))
	require.NoError(t, err)

	started := make(chan string, 16)
	var mu sync.Mutex
	causes := map[string]error{}
	rctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			if j.Payload.WorkflowID != "long" {
				return nil
			}
			started <- j.ID
			<-ctx.Done()
			mu.Lock()
			causes[j.ID] = context.Cause(ctx)
			mu.Unlock()
			return ctx.Err()
		}, workers)
	}()
	ids := []string{"long-1", "long-2", "long-3"}
	for _, id := range ids {
		_, err := q.Enqueue(ctx, execution{WorkflowID: "long"}, queue.WithID(id))
		require.NoError(t, err)
	}
	for range ids {
		<-started
	}
	for _, id := range ids[:2] {
		s, err := other.Cancel(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queue.Active, s)
	}
	harness.WaitFor(t, "two cancelled jobs settled", func() bool {
		s, err := q.Stats(ctx)
		return err == nil && s.TotalCancelled == 2
	})
	for _, id := range ids[:2] {
		in, err := q.Peek(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queue.Cancelled, in.State, id)
		mu.Lock()
		assert.ErrorIs(t, causes[id], queue.ErrCancelled, id)
		mu.Unlock()
	}
	in, err := q.Peek(ctx, "long-3")
	require.NoError(t, err)
	assert.Equal(t, queue.Active, in.State, "an uncancelled job runs on")

	// the queue keeps serving: a short job finishes meanwhile
	_, err = q.Enqueue(ctx, execution{WorkflowID: "short"}, queue.WithID("short"))
	require.NoError(t, err)
	harness.WaitFor(t, "short job done", func() bool {
		in, err := q.Peek(ctx, "short")
		return err == nil && in.State == queue.Completed
	})
	_, err = q.Cancel(ctx, "long-3")
	require.NoError(t, err)
	stop()
	require.NoError(t, <-errc)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), s.TotalCancelled)
	assert.Equal(t, int64(0), s.TotalFailed, "cancelled jobs are not failed attempts")
	assert.Equal(t, int64(1), s.TotalProcessed)
	assert.Equal(t, int64(0), s.InFlight+s.Pending())
	for _, k := range e.Keys() {
		assert.NotContains(t, k, ":cancel", "cancel flags left after settling")
	}
}

// TestCancelWaitingJobAndTimeout: a pending or scheduled job is removed by
// Cancel at once; an unknown one is ErrNotFound; a job's WithTimeout ends
// its handler's context (a failed attempt); Extend reports a Cancel.
func TestCancelWaitingJobAndTimeout(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cxw")
	_, err := q.Enqueue(ctx, execution{WorkflowID: "a"}, queue.WithID("p"))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, execution{WorkflowID: "b"}, queue.WithID("s"), queue.WithDelay(time.Hour))
	require.NoError(t, err)
	st, err := q.Cancel(ctx, "p")
	require.NoError(t, err)
	assert.Equal(t, queue.Pending, st)
	st, err = q.Cancel(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, queue.Scheduled, st)
	_, err = q.Cancel(ctx, "p")
	require.ErrorIs(t, err, queue.ErrNotFound)
	_, err = q.Cancel(ctx, "")
	require.ErrorIs(t, err, queue.ErrInvalid)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.TotalCancelled)
	assert.Equal(t, int64(0), s.Pending()+s.Delayed[queue.Normal])

	_, err = q.Enqueue(ctx, execution{WorkflowID: "c"}, queue.WithID("x"), queue.WithTimeout(-time.Second))
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = q.Enqueue(ctx, execution{WorkflowID: "c"}, queue.WithID("t"), queue.WithTimeout(20*time.Millisecond), queue.WithJobMaxRetries(0))
	require.NoError(t, err)
	var got error
	var timeout time.Duration
	rctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			timeout = j.Timeout
			<-ctx.Done() // ends with the job's timeout
			got = ctx.Err()
			return got
		}, 1)
	}()
	harness.WaitFor(t, "timed-out job dead", func() bool {
		s, err := q.Stats(ctx)
		return err == nil && s.TotalDead == 1
	})
	stop()
	require.NoError(t, <-errc)
	assert.True(t, errors.Is(got, context.DeadlineExceeded), "%v", got)
	assert.Equal(t, 20*time.Millisecond, timeout)

	// Dequeue users learn of a Cancel from Extend.
	_, err = q.Enqueue(ctx, execution{WorkflowID: "d"}, queue.WithID("m"))
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, q.Extend(ctx, j))
	st, err = q.Cancel(ctx, "m")
	require.NoError(t, err)
	assert.Equal(t, queue.Active, st)
	require.ErrorIs(t, q.Extend(ctx, j), queue.ErrCancelled)
	require.NoError(t, q.Ack(ctx, j))
	for _, k := range e.Keys() {
		assert.NotContains(t, k, ":cancel", "cancel flag left after the ack")
	}
}
