package otelqueue_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/queue/otelqueue"
)

type task struct {
	N int `json:"n"`
}

// TestTraceCrossesTheQueue: the consumer span of every job is the child
// of the span that enqueued it (through the job's headers), across two
// clients, with many jobs handled concurrently; a failed attempt is
// recorded on its span.
func TestTraceCrossesTheQueue(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	opt := otelqueue.WithTracerProvider(tp)

	producer, err := queue.New[task](e.Client, "traced", queue.WithNamespace(e.NS))
	require.NoError(t, err)
	var mu sync.Mutex
	handled := map[string]trace.SpanContext{} // job ID -> the handler's span
	var order []string
	mark := func(name string) func(queue.Handler[task]) queue.Handler[task] {
		return func(next queue.Handler[task]) queue.Handler[task] {
			return func(ctx context.Context, j *queue.Job[task]) error {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return next(ctx, j)
			}
		}
	}
	consumer, err := queue.New[task](e.FreshClient(), "traced", queue.WithNamespace(e.NS),
		queue.WithMiddleware(otelqueue.Middleware[task](opt), mark("second")), queue.WithMaxRetries(1),
		queue.WithBackoff(queue.ConstantBackoff(0)))
	require.NoError(t, err)

	const n = 40
	parents := map[string]trace.SpanContext{}
	for i := 0; i < n; i++ {
		pctx, span := tp.Tracer("test").Start(ctx, "request")
		var id string
		if i%2 == 0 {
			id, err = producer.Enqueue(pctx, task{N: i}, otelqueue.Inject(pctx))
			parents[id] = span.SpanContext()
		} else {
			id, err = otelqueue.Enqueue(pctx, producer, task{N: i}, nil, opt)
		}
		require.NoError(t, err)
		span.End()
		if i%2 == 1 {
			for _, s := range rec.Ended() {
				if s.SpanKind() == trace.SpanKindProducer && s.Parent().SpanID() == span.SpanContext().SpanID() {
					parents[id] = s.SpanContext()
				}
			}
		}
	}
	require.Len(t, parents, n)
	_, err = producer.Enqueue(ctx, task{N: -1}, queue.WithID("untraced"))
	require.NoError(t, err)

	rctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	failed := map[string]bool{}
	go func() {
		errc <- consumer.Run(rctx, func(ctx context.Context, j *queue.Job[task]) error {
			mu.Lock()
			defer mu.Unlock()
			if j.Payload.N == 7 && !failed[j.ID] {
				failed[j.ID] = true
				return errors.New("first attempt fails")
			}
			handled[j.ID] = trace.SpanContextFromContext(ctx)
			return nil
		}, 8)
	}()
	harness.WaitFor(t, "every job handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == n+1
	})
	stop()
	require.NoError(t, <-errc)

	consumerSpans := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanKind() != trace.SpanKindConsumer {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == "messaging.message.id" {
				consumerSpans[a.Value.AsString()] = append(consumerSpans[a.Value.AsString()], s)
			}
		}
		assert.Equal(t, "traced process", s.Name())
	}
	for id, parent := range parents {
		spans := consumerSpans[id]
		require.NotEmpty(t, spans, id)
		for _, s := range spans {
			assert.Equal(t, parent.TraceID(), s.SpanContext().TraceID(), "job %s continues its producer's trace", id)
			assert.Equal(t, parent.SpanID(), s.Parent().SpanID(), "job %s: the producer span is the parent", id)
		}
		assert.Equal(t, spans[len(spans)-1].SpanContext().SpanID(), handled[id].SpanID(), "the handler runs in the span")
	}
	require.Len(t, failed, 1)
	for id := range failed {
		spans := consumerSpans[id]
		require.Len(t, spans, 2, "one span per attempt")
		errs := 0
		for _, s := range spans {
			if s.Status().Code == codes.Error {
				errs++
			}
		}
		assert.Equal(t, 1, errs)
	}
	un := consumerSpans["untraced"]
	require.Len(t, un, 1)
	assert.False(t, un[0].Parent().IsValid(), "no headers: a new trace")

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, order)
	for _, name := range order {
		assert.Equal(t, "second", name)
	}
}
