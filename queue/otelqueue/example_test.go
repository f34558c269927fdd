package otelqueue_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/queue/otelqueue"
)

type Email struct {
	To string `json:"to"`
}

func Example() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))

	q, _ := queue.New[Email](rdb, "emails",
		queue.WithMiddleware(otelqueue.Middleware[Email](otelqueue.WithTracerProvider(tp))))

	// The producer: the job carries the request's trace context.
	reqCtx, req := tp.Tracer("app").Start(ctx, "POST /signup")
	_, _ = q.Enqueue(reqCtx, Email{To: "ann@example.com"}, otelqueue.Inject(reqCtx))
	req.End()

	// The consumer: its handler runs in a span of the same trace.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = q.Run(runCtx, func(ctx context.Context, j *queue.Job[Email]) error {
			fmt.Println("same trace:", trace.SpanContextFromContext(ctx).TraceID() == req.SpanContext().TraceID())
			stop()
			return nil
		}, 1)
	}()
	<-done
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindConsumer {
			fmt.Println(s.Name(), "child of", s.Parent().SpanID() == req.SpanContext().SpanID())
		}
	}
	// Output:
	// same trace: true
	// emails process child of true
}
