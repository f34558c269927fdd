package queue

import (
	"time"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Defaults and bounds of the options.
const (
	// DefaultLease is the visibility timeout of a delivered job (WithLease).
	DefaultLease = 30 * time.Second
	// MinLease and MaxLease bound WithLease.
	MinLease = 10 * time.Millisecond
	MaxLease = 24 * time.Hour
	// DefaultMaxRetries is the retries after the first attempt (WithMaxRetries).
	DefaultMaxRetries = 5
	// MaxRetriesLimit bounds WithMaxRetries and WithJobMaxRetries.
	MaxRetriesLimit = 100000
	// DefaultMaxPayload is the largest encoded job JSON in bytes (WithMaxPayload).
	DefaultMaxPayload = 1 << 20
	// MaxPayloadLimit bounds WithMaxPayload (Redis's largest string).
	MaxPayloadLimit = 512 << 20
	// DefaultDeadCap is the most entries the dead-letter list keeps (WithDeadLetterCap).
	DefaultDeadCap = 10000
	// MaxDeadCap bounds WithDeadLetterCap: the scripts that look a job up
	// in the dead-letter list scan it.
	MaxDeadCap = 100000
	// DeadTTL is the dead-letter list's lifetime (seed 001: 604800 s),
	// refreshed whenever a job is added to it.
	DeadTTL = 7 * 24 * time.Hour
	// DefaultShutdownGrace is how long Run lets handlers finish after its
	// context ends (WithShutdownGrace).
	DefaultShutdownGrace = 30 * time.Second
	// MaxShutdownGrace bounds WithShutdownGrace.
	MaxShutdownGrace = 24 * time.Hour
	// MaxDelay bounds how far ahead a job can be scheduled (WithDelay,
	// WithProcessAt, WithUnique, a Backoff's delay): ready times are
	// scored in ms × 1000, which must stay exact in a double.
	MaxDelay = 366 * 24 * time.Hour
	// DefaultPipelines is the round trips of Enqueue a Queue keeps in
	// flight before further calls wait and share a pipeline
	// (WithPipelining).
	DefaultPipelines = 2
	// MaxPipelines bounds WithPipelining.
	MaxPipelines = 1024
	// MaxEventsLength bounds WithEvents.
	MaxEventsLength = 1 << 24
	// MaxRetention bounds WithRetention.
	MaxRetention = 30 * 24 * time.Hour
	// DefaultRetainCap is the most finished jobs WithRetention keeps per
	// queue unless WithRetentionCap says otherwise.
	DefaultRetainCap = 10000
	// MaxRetainCap bounds WithRetentionCap.
	MaxRetainCap = 1000000
	// MaxResult bounds the JSON of a job's result (Job.SetResult).
	MaxResult = 64 << 10
	// MaxProgress bounds the JSON of a job's progress (Job.SetProgress).
	MaxProgress = 4 << 10
)

// Option configures a Queue. Options only record; New checks them.
type Option func(*options)

type options struct {
	ns         keys.Namespace
	codec      codec.Codec
	lease      time.Duration
	maxRetries int
	maxPayload int
	deadCap    int
	backoff    Backoff
	grace      time.Duration
	onError    func(error)
	pipelines  int
	durability call.Durability
	retention  time.Duration
	retainCap  int
	middleware []any // func(Handler[T]) Handler[T], checked by New[T]
	events     int
}

// WithNamespace puts every key under ns (prefix and hash-tag mode).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithCodec encodes payloads with c instead of JSON (codec.JSON). The job
// envelope stays JSON; a payload that is not valid JSON is stored
// base64-encoded under "payload_bytes". A nil codec fails New.
func WithCodec(c codec.Codec) Option { return func(o *options) { o.codec = c } }

// WithLease sets the visibility timeout of a delivered job (default
// DefaultLease, 30 s; between MinLease and MaxLease): a job neither acked,
// failed, released nor extended within it is delivered again. Run extends
// leases while handlers run.
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithMaxRetries sets the default number of retries after the first
// attempt (default DefaultMaxRetries, 5; 0 to MaxRetriesLimit) for jobs
// enqueued without WithJobMaxRetries.
func WithMaxRetries(n int) Option { return func(o *options) { o.maxRetries = n } }

// WithMaxPayload sets the largest encoded job JSON (envelope and payload)
// in bytes (default 1 MiB, at most MaxPayloadLimit); a larger job is
// refused with ErrTooLarge.
func WithMaxPayload(n int) Option { return func(o *options) { o.maxPayload = n } }

// WithDeadLetterCap bounds the dead-letter list (default 10,000 entries,
// at most MaxDeadCap); the oldest entries are trimmed in the script that
// adds a new one.
func WithDeadLetterCap(n int) Option { return func(o *options) { o.deadCap = n } }

// WithBackoff sets the retry delay policy of Nack and Run (default
// ExponentialBackoff(time.Second, 10*time.Minute)). A nil Backoff fails
// New.
func WithBackoff(b Backoff) Option { return func(o *options) { o.backoff = b } }

// WithShutdownGrace sets how long Run lets running handlers finish after
// its context is cancelled (default 30 s, 0 to MaxShutdownGrace) before
// cancelling their contexts with cause ErrShutdown.
func WithShutdownGrace(d time.Duration) Option { return func(o *options) { o.grace = d } }

// WithErrorHandler receives the errors Run survives: Redis unreachable,
// a corrupt job dead-lettered, a failed ack (the job is then redelivered
// after its lease), outcomes refused because the lease was lost (matching
// ErrLeaseLost: the job was recovered, deleted or purged meanwhile),
// outcomes written but not acknowledged by enough replicas (matching
// ErrNotDurable, with WithDurability). The default discards them. f
// must be safe for concurrent use.
func WithErrorHandler(f func(error)) Option { return func(o *options) { o.onError = f } }

// WithPipelining sets how many round trips of Enqueue one Queue keeps in
// flight at once (auto-pipelining). An Enqueue made while none is in
// flight is sent at once, on its own. Calls made while some are in flight
// wait; they go out together, as one pipeline, when a round trip comes
// back, or at once in a new round trip (up to n) when as many wait as are
// in flight. Each Enqueue is still one atomic script with its own reply;
// many producers at once share the network reads and writes, which cost
// the client and Redis more than the script does. Without this option a
// Queue keeps DefaultPipelines; n = 0 turns auto-pipelining off (every
// Enqueue is its own round trip); n outside 0..MaxPipelines fails New with
// ErrInvalid. When a connection breaks mid-pipeline, go-redis resends the
// whole pipeline: every Enqueue in it reports its first outcome (see the
// package doc).
func WithPipelining(n int) Option { return func(o *options) { o.pipelines = n } }

// WithDurability makes the writes a failover must not lose wait, in their
// own round trip, until replicas replicas acknowledged them, for at most
// timeout: Enqueue, EnqueueBatch, the dequeues that lease jobs (a lost
// lease lets a failover deliver the job twice at once), and the outcomes
// of deliveries (Ack, Nack, Release, Extend, and those Run writes). The
// script and a WAIT go
// out as one pipeline to the queue's master (these calls are then not
// auto-pipelined). When fewer replicas acknowledge in time the call
// returns its result with an error matching ErrNotDurable: the write was
// done, but a failover may still lose it; sending it again (the same
// WithID) is safe. replicas is 1 to 64 and timeout 1ms to 1 min and under
// the client's ReadTimeout, and the client must be a *redis.Client or a
// *redis.ClusterClient, else New fails with ErrInvalid. See Failover in
// the package doc for what is lost without it.
func WithDurability(replicas int, timeout time.Duration) Option {
	return func(o *options) { o.durability = call.Durability{Replicas: replicas, Timeout: timeout} }
}

// WithRetention keeps every job that finishes (acked: "completed") for d
// after it finished, with its result (Job.SetResult) and its last
// progress (Job.SetProgress): Peek and List(Completed) return it. Entries
// live in one hash per queue on the queue's slot, indexed by expiry; the
// script that adds entries drops those past d and the oldest beyond the
// cap (WithRetentionCap, default DefaultRetainCap), and both keys expire d
// after the last write. d is 1ms to MaxRetention; without this option
// (the default) nothing is kept and an ack costs what it always did.
func WithRetention(d time.Duration) Option { return func(o *options) { o.retention = d } }

// WithRetentionCap bounds how many finished jobs WithRetention keeps (1 to
// MaxRetainCap; default DefaultRetainCap): the oldest are dropped first.
func WithRetentionCap(n int) Option { return func(o *options) { o.retainCap = n } }

// WithMiddleware wraps the handler Run is given with mw, in order: the
// first is the outermost, so it runs first and returns last. A
// middleware sees the handler's context (lease, Cancel, timeout) and the
// job (its Headers: trace context, tenant, ...), and may return a
// handler that changes either. Several WithMiddleware add up. The type
// parameter must be the queue's payload type, else New fails with
// ErrInvalid; a nil middleware fails New too. Without it Run calls the
// handler directly.
func WithMiddleware[T any](mw ...func(Handler[T]) Handler[T]) Option {
	return func(o *options) {
		for _, m := range mw {
			o.middleware = append(o.middleware, m)
		}
	}
}

// WithEvents makes the queue's scripts record lifecycle events on a
// Redis Stream of the queue's slot, queue:{queue_name}:events, capped at
// about n entries (XADD MAXLEN ~ n; 1 to MaxEventsLength): enqueued,
// started, progress, completed, failed, retried, dead and cancelled, each
// written by the script that makes the change, in its atomic step. Read
// them with ReadEvents, resuming from the last event's ID: unlike pub/sub
// nothing is missed while a reader is away, unless the stream was trimmed
// past its position. Every producer and consumer of the queue should
// have the option (an instance without it records nothing); without it
// (the default) no script writes an event.
func WithEvents(n int) Option { return func(o *options) { o.events = n } }

func defaultOptions() options {
	return options{
		codec: codec.JSON{}, lease: DefaultLease, maxRetries: DefaultMaxRetries, maxPayload: DefaultMaxPayload,
		deadCap: DefaultDeadCap, backoff: ExponentialBackoff(time.Second, 10*time.Minute), grace: DefaultShutdownGrace,
		pipelines: DefaultPipelines, retainCap: DefaultRetainCap,
	}
}

// check validates the options for New.
func (o *options) check(op string) error {
	switch {
	case o.codec == nil:
		return pkg.Invalidf(op, "nil codec")
	case o.backoff == nil:
		return pkg.Invalidf(op, "nil backoff")
	case o.lease < MinLease || o.lease > MaxLease:
		return pkg.Invalidf(op, "lease %v outside [%v, %v]", o.lease, MinLease, MaxLease)
	case o.maxRetries < 0 || o.maxRetries > MaxRetriesLimit:
		return pkg.Invalidf(op, "max retries %d outside [0, %d]", o.maxRetries, MaxRetriesLimit)
	case o.maxPayload < 1 || o.maxPayload > MaxPayloadLimit:
		return pkg.Invalidf(op, "max payload %d outside [1, %d]", o.maxPayload, MaxPayloadLimit)
	case o.deadCap < 1 || o.deadCap > MaxDeadCap:
		return pkg.Invalidf(op, "dead-letter cap %d outside [1, %d]", o.deadCap, MaxDeadCap)
	case o.grace < 0 || o.grace > MaxShutdownGrace:
		return pkg.Invalidf(op, "shutdown grace %v outside [0, %v]", o.grace, MaxShutdownGrace)
	case o.retention < 0 || o.retention > MaxRetention || (o.retention > 0 && o.retention < time.Millisecond):
		return pkg.Invalidf(op, "retention %v outside [1ms, %v]", o.retention, MaxRetention)
	case o.retainCap < 1 || o.retainCap > MaxRetainCap:
		return pkg.Invalidf(op, "retention cap %d outside [1, %d]", o.retainCap, MaxRetainCap)
	case o.events < 0 || o.events > MaxEventsLength:
		return pkg.Invalidf(op, "events length %d outside [1, %d]", o.events, MaxEventsLength)
	case o.pipelines < 0 || o.pipelines > MaxPipelines:
		return pkg.Invalidf(op, "WithPipelining(%d): want 0..%d", o.pipelines, MaxPipelines)
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}
