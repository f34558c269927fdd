package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

func TestPauseResume(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "paused")
	for range 3 {
		_, err := q.Enqueue(ctx, execution{WorkflowID: "before"})
		require.NoError(t, err)
	}
	inflight, err := q.TryDequeue(ctx)
	require.NoError(t, err)

	changed, err := q.Pause(ctx)
	require.NoError(t, err)
	assert.True(t, changed)
	changed, err = q.Pause(ctx)
	require.NoError(t, err)
	assert.False(t, changed, "already paused")

	// Enqueues still land; nothing is delivered, by any dequeue.
	for range 2 {
		_, err := q.Enqueue(ctx, execution{WorkflowID: "while paused"})
		require.NoError(t, err)
	}
	_, err = q.TryDequeue(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty)
	_, err = q.Dequeue(timeout(ctx))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.True(t, s.Paused)
	assert.WithinDuration(t, e.Now(), s.PausedAt, 5*time.Second)
	assert.Equal(t, int64(5), s.TotalEnqueued)
	assert.Equal(t, int64(4), s.Pending())
	assert.Equal(t, int64(1), s.InFlight)

	// The job in flight finishes.
	require.NoError(t, q.Ack(ctx, inflight))

	// A consumer waiting through the pause gets a job on Resume.
	got := make(chan *queue.Job[execution], 1)
	go func() {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		j, err := q.Dequeue(c)
		assert.NoError(t, err)
		got <- j
	}()
	changed, err = q.Resume(ctx)
	require.NoError(t, err)
	assert.True(t, changed)
	changed, err = q.Resume(ctx)
	require.NoError(t, err)
	assert.False(t, changed, "already running")
	n := 0
	if j := <-got; j != nil {
		require.NoError(t, q.Ack(ctx, j))
		n++
	}
	for {
		j, err := q.TryDequeue(ctx)
		if err != nil {
			assert.ErrorIs(t, err, queue.ErrEmpty)
			break
		}
		require.NoError(t, q.Ack(ctx, j))
		n++
	}
	assert.Equal(t, 4, n)
	s, err = q.Stats(ctx)
	require.NoError(t, err)
	assert.False(t, s.Paused)
	assert.True(t, s.PausedAt.IsZero())
	assert.Equal(t, int64(5), s.TotalProcessed)
}

// Run's handlers started before a Pause finish; none starts after it.
func TestPauseRun(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "pauserun")
	for range 20 {
		_, err := q.Enqueue(ctx, execution{WorkflowID: "x"})
		require.NoError(t, err)
	}
	_, err := q.Pause(ctx)
	require.NoError(t, err)
	var ran atomic.Int64
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Run(rctx, func(context.Context, *queue.Job[execution]) error { ran.Add(1); return nil }, 4)
	}()
	time.Sleep(300 * time.Millisecond) // longer than a consumer's idle wait: it polled while paused
	assert.Zero(t, ran.Load(), "a paused queue delivers nothing")
	_, err = q.Resume(ctx)
	require.NoError(t, err)
	harness.WaitFor(t, "20 jobs run", func() bool { return ran.Load() == 20 })
	cancel()
	require.NoError(t, <-done)
}
