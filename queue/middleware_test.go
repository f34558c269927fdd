package queue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

type ctxKey string

// TestMiddlewareOrderAndHeaders: Run wraps the handler in the queue's
// middleware in order (the first outermost), for every job of many
// handled concurrently; a middleware reads the job's envelope headers and
// passes values to the handler through its context.
func TestMiddlewareOrderAndHeaders(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	var mu sync.Mutex
	trail := map[string][]string{}
	note := func(id, s string) {
		mu.Lock()
		trail[id] = append(trail[id], s)
		mu.Unlock()
	}
	mw := func(name string) func(queue.Handler[execution]) queue.Handler[execution] {
		return func(next queue.Handler[execution]) queue.Handler[execution] {
			return func(ctx context.Context, j *queue.Job[execution]) error {
				note(j.ID, name+">")
				if name == "outer" {
					ctx = context.WithValue(ctx, ctxKey("tenant"), j.Headers["tenant"])
				}
				err := next(ctx, j)
				note(j.ID, "<"+name)
				return err
			}
		}
	}
	q := newQ(t, e, "mw", queue.WithMiddleware(mw("outer")), queue.WithMiddleware(mw("inner")))
	const n = 60
	for i := 0; i < n; i++ {
		_, err := q.Enqueue(ctx, execution{WorkflowID: fmt.Sprint(i)}, queue.WithID(fmt.Sprintf("m%d", i)),
			queue.WithHeaders(map[string]string{"tenant": fmt.Sprintf("t%d", i%3)}))
		require.NoError(t, err)
	}
	rctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error {
			note(j.ID, "handler:"+ctx.Value(ctxKey("tenant")).(string)+":"+j.Queue())
			return nil
		}, 8)
	}()
	harness.WaitFor(t, "all handled", func() bool {
		s, err := q.Stats(ctx)
		return err == nil && s.TotalProcessed == n
	})
	stop()
	require.NoError(t, <-errc)
	require.Len(t, trail, n)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m%d", i)
		assert.Equal(t, []string{"outer>", "inner>", fmt.Sprintf("handler:t%d:mw", i%3), "<inner", "<outer"}, trail[id], id)
	}
}

func TestMiddlewareAndHeadersChecked(t *testing.T) {
	other := func(next queue.Handler[int]) queue.Handler[int] { return next }
	_, err := queue.New[execution](redisNop(), "q", queue.WithMiddleware(other))
	require.ErrorIs(t, err, queue.ErrInvalid, "a middleware of another payload type")
	_, err = queue.New[execution](redisNop(), "q", queue.WithMiddleware[execution](nil))
	require.ErrorIs(t, err, queue.ErrInvalid)

	e := harness.New(t)
	q := newQ(t, e, "hdr")
	big := map[string]string{}
	for i := 0; i <= queue.MaxHeaders; i++ {
		big[fmt.Sprint(i)] = "v"
	}
	_, err = q.Enqueue(e.Ctx(), execution{}, queue.WithHeaders(big))
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = q.Enqueue(e.Ctx(), execution{}, queue.WithHeaders(map[string]string{"": "v"}))
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = q.Enqueue(e.Ctx(), execution{}, queue.WithHeaders(map[string]string{"k": string(make([]byte, queue.MaxHeaderBytes))}))
	require.ErrorIs(t, err, queue.ErrInvalid)
	assert.Empty(t, e.Keys(), "nothing written")

	_, err = q.Enqueue(e.Ctx(), execution{WorkflowID: "h"}, queue.WithID("h1"), queue.WithHeaders(map[string]string{"a": "1"}),
		queue.WithHeaders(map[string]string{"b": "2"}))
	require.NoError(t, err)
	in, err := q.Peek(e.Ctx(), "h1")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, in.Headers)
	j, err := q.TryDequeue(e.Ctx())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, j.Headers)
	assert.Equal(t, "hdr", j.Queue())
}
