package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// TestRetentionKeepsResultAndProgress: a job's progress is readable by ID
// while it runs, and with WithRetention the finished job is kept with its
// result and last progress for the retention, then gone.
func TestRetentionKeepsResultAndProgress(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "ret", queue.WithRetention(time.Hour))
	_, err := q.Enqueue(ctx, execution{WorkflowID: "w1"}, queue.WithID("j1"))
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)

	in, err := q.Peek(ctx, "j1")
	require.NoError(t, err)
	assert.Equal(t, queue.Active, in.State)
	assert.Nil(t, in.Progress, "no progress reported yet")
	require.NoError(t, j.SetProgress(ctx, map[string]int{"done": 3, "of": 10}))
	require.NoError(t, j.SetProgress(ctx, map[string]int{"done": 7, "of": 10}))
	in, err = q.Peek(ctx, "j1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"done":7,"of":10}`, string(in.Progress))

	big := make([]byte, queue.MaxProgress)
	require.ErrorIs(t, j.SetProgress(ctx, string(big)), queue.ErrTooLarge)
	require.ErrorIs(t, j.SetProgress(ctx, func() {}), queue.ErrInvalid)
	require.ErrorIs(t, j.SetResult(func() {}), queue.ErrInvalid)
	require.NoError(t, j.SetResult(map[string]string{"report": "r-1"}))
	require.NoError(t, q.Ack(ctx, j))

	in, err = q.Peek(ctx, "j1")
	require.NoError(t, err)
	assert.Equal(t, queue.Completed, in.State)
	assert.Equal(t, "w1", in.Payload.WorkflowID)
	assert.JSONEq(t, `{"report":"r-1"}`, string(in.Result))
	assert.JSONEq(t, `{"done":7,"of":10}`, string(in.Progress), "the last progress is kept")
	assert.Equal(t, j.Delivery, in.Delivery)
	assert.False(t, in.At.IsZero())
	require.ErrorIs(t, j.SetProgress(ctx, 1), queue.ErrLeaseLost, "settled: no longer held")

	done, err := q.List(ctx, queue.Completed, 0, 10)
	require.NoError(t, err)
	require.Len(t, done, 1)
	assert.Equal(t, "j1", done[0].ID)

	// the progress hash holds nothing once the delivery is settled
	for _, k := range e.Keys() {
		assert.NotContains(t, k, ":progress", "progress field left after the ack")
	}
	e.RequireTTLs(func(k string) bool { return persistent(k) && !isDone(k) })

	if e.Mini != nil { // an hour of server time: miniredis moves it
		e.Advance(time.Hour + time.Second)
		_, err = q.Peek(ctx, "j1")
		require.ErrorIs(t, err, queue.ErrNotFound, "kept for the retention only")
		done, err = q.List(ctx, queue.Completed, 0, 10)
		require.NoError(t, err)
		assert.Empty(t, done)
	}
}

func isDone(k string) bool {
	return len(k) > 5 && (k[len(k)-5:] == ":done" || k[len(k)-8:] == ":done_at")
}

// TestRetentionIsBoundedAndOptIn: without WithRetention nothing is kept;
// with it, the cap holds whatever the number of jobs, newest kept, and Run's
// handlers' results are kept from many goroutines.
func TestRetentionIsBoundedAndOptIn(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	plain := newQ(t, e, "plain")
	_, err := plain.Enqueue(ctx, execution{WorkflowID: "x"}, queue.WithID("p1"))
	require.NoError(t, err)
	j, err := plain.TryDequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, j.SetResult("ignored"))
	require.NoError(t, plain.Ack(ctx, j))
	_, err = plain.Peek(ctx, "p1")
	require.ErrorIs(t, err, queue.ErrNotFound)
	for _, k := range e.Keys() {
		assert.NotContains(t, k, ":done", "nothing kept without WithRetention")
	}

	const n, capN = 120, 50
	q := newQ(t, e, "capped", queue.WithRetention(time.Hour), queue.WithRetentionCap(capN))
	for i := 0; i < n; i++ {
		_, err := q.Enqueue(ctx, execution{WorkflowID: fmt.Sprint(i)}, queue.WithID(fmt.Sprintf("c%03d", i)))
		require.NoError(t, err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			if err := j.SetProgress(ctx, 50); err != nil {
				return err
			}
			mu.Lock()
			seen[j.ID] = true
			mu.Unlock()
			if j.Payload.WorkflowID == "13" {
				return errors.New("unlucky") // retried, then completed
			}
			return j.SetResult(map[string]string{"echo": j.Payload.WorkflowID})
		}, 8)
	}()
	harness.WaitFor(t, "all jobs processed", func() bool {
		s, err := q.Stats(ctx)
		return err == nil && s.TotalProcessed == n-1 && s.TotalFailed >= 1
	})
	cancel()
	require.NoError(t, <-errc)
	done, err := q.List(ctx, queue.Completed, 0, queue.MaxList)
	require.NoError(t, err)
	assert.Len(t, done, capN, "the cap holds")
	for _, in := range done {
		var r map[string]string
		require.NoError(t, json.Unmarshal(in.Result, &r))
		assert.Equal(t, in.Payload.WorkflowID, r["echo"])
		assert.JSONEq(t, "50", string(in.Progress))
	}
	for _, k := range e.Keys() {
		assert.NotContains(t, k, ":progress", "progress fields left after the acks")
	}
	assert.Len(t, seen, n)
}
