package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

	beforePause := e.Now()
	changed, err := q.Pause(ctx)
	require.NoError(t, err)
	afterPause := e.Now()
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
	// between the server times read around the Pause (ms precision)
	assert.False(t, s.PausedAt.Before(beforePause.Truncate(time.Millisecond)), "%v before %v", s.PausedAt, beforePause)
	assert.False(t, s.PausedAt.After(afterPause.Add(time.Millisecond)), "%v after %v", s.PausedAt, afterPause)
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
	// Run's client counts its dequeue scripts, so that the test waits for
	// Run to have polled the paused queue at least twice (after an idle
	// wait; the first send may be an EVALSHA and its EVAL) rather than for
	// a fixed time a busy machine may not give it.
	c := e.FreshClient()
	polls := &scriptCount{}
	c.AddHook(polls)
	rq, err := queue.New[execution](c, "pauserun", queue.WithNamespace(e.NS))
	require.NoError(t, err)
	var ran atomic.Int64
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- rq.Run(rctx, func(context.Context, *queue.Job[execution]) error { ran.Add(1); return nil }, 4)
	}()
	harness.WaitFor(t, "two polls while paused", func() bool { return polls.n.Load() >= 3 })
	assert.Zero(t, ran.Load(), "a paused queue delivers nothing")
	_, err = q.Resume(ctx)
	require.NoError(t, err)
	harness.WaitFor(t, "20 jobs run", func() bool { return ran.Load() == 20 })
	cancel()
	require.NoError(t, <-done)
}

// scriptCount is a go-redis hook that counts the scripts a client sends
// (EVALSHA or EVAL), alone or in a pipeline.
type scriptCount struct{ n atomic.Int64 }

func (h *scriptCount) count(cmd redis.Cmder) {
	if name := cmd.Name(); name == "evalsha" || name == "eval" {
		h.n.Add(1)
	}
}

func (h *scriptCount) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}

func (h *scriptCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}
