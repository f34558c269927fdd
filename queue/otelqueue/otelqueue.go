// Package otelqueue carries OpenTelemetry trace context through the jobs
// of package queue and traces their handling. It is a module of its own,
// so that importing queue never pulls in OpenTelemetry.
//
//	q, err := queue.New[Email](rdb, "emails", queue.WithMiddleware(otelqueue.Middleware[Email]()))
//	...
//	_, err = q.Enqueue(ctx, Email{To: "ann@example.com"}, otelqueue.Inject(ctx)) // ctx holds the request's span
//	// q.Run's handlers now run in a consumer span, a child of the request's.
//
// A producer puts the current trace context in the job's envelope
// headers (queue.WithHeaders) with Inject, or enqueues in a producer span
// with Enqueue; a consumer adds Middleware to its queue
// (queue.WithMiddleware), which extracts that context from the job's
// headers and runs the handler in a consumer span, its child. The
// propagator defaults to W3C Trace Context and Baggage ("traceparent",
// "tracestate", "baggage" headers); the tracer provider to the global
// one.
package otelqueue

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/redschema/redschema/queue"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/redschema/redschema/queue/otelqueue"

// Option configures Inject, Enqueue and Middleware.
type Option func(*config)

type config struct {
	tp   trace.TracerProvider
	prop propagation.TextMapPropagator
}

// WithTracerProvider sets the tracer provider.
//
// Default: otel's global tracer provider.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithPropagator sets how the context is written to and read from job
// headers.
//
// Default: W3C Trace Context and Baggage.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.prop = p }
}

func newConfig(opts []Option) config {
	c := config{}
	for _, f := range opts {
		f(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.prop == nil {
		c.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return c
}

// Inject returns an enqueue option that puts ctx's trace context (and
// baggage) in the job's headers. With no span in ctx it adds nothing.
func Inject(ctx context.Context, opts ...Option) queue.EnqueueOption {
	c := newConfig(opts)
	h := propagation.MapCarrier{}
	c.prop.Inject(ctx, h)
	return queue.WithHeaders(h)
}

// Enqueue enqueues payload on q in a producer span ("<queue> send"),
// whose context the job carries (Inject), and returns the job's ID. The
// span records the job ID and an error, if any.
func Enqueue[T any](ctx context.Context, q *queue.Queue[T], payload T, enqueueOpts []queue.EnqueueOption, opts ...Option) (string, error) {
	c := newConfig(opts)
	ctx, span := c.tp.Tracer(ScopeName).Start(ctx, q.Name()+" send", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attrs(q.Name(), "send")...))
	defer span.End()
	h := propagation.MapCarrier{}
	c.prop.Inject(ctx, h)
	id, err := q.Enqueue(ctx, payload, append(append([]queue.EnqueueOption{}, enqueueOpts...), queue.WithHeaders(h))...)
	if id != "" {
		span.SetAttributes(attribute.String("messaging.message.id", id))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return id, err
}

// Middleware returns handler middleware for queue.WithMiddleware: it
// extracts the trace context from the job's headers and runs the handler
// in a consumer span ("<queue> process") that is its child, with the
// job's ID, delivery and retry count; a handler error is recorded on the
// span and sets its status. A job without trace headers gets a new
// trace, its parent the handler's context.
func Middleware[T any](opts ...Option) func(queue.Handler[T]) queue.Handler[T] {
	c := newConfig(opts)
	tracer := c.tp.Tracer(ScopeName)
	return func(next queue.Handler[T]) queue.Handler[T] {
		return func(ctx context.Context, j *queue.Job[T]) error {
			if len(j.Headers) > 0 {
				ctx = c.prop.Extract(ctx, propagation.MapCarrier(j.Headers))
			}
			name := j.Queue()
			ctx, span := tracer.Start(ctx, name+" process", trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(append(attrs(name, "process"),
					attribute.String("messaging.message.id", j.ID),
					attribute.Int64("messaging.redschema.delivery", j.Delivery),
					attribute.Int("messaging.redschema.retry_count", j.RetryCount))...))
			defer span.End()
			err := next(ctx, j)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		}
	}
}

func attrs(queueName, op string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.system", "redis"),
		attribute.String("messaging.operation.type", op),
		attribute.String("messaging.destination.name", queueName),
	}
}
