package queue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

// Sentinel errors. Every error the package returns for these conditions
// wraps one of them; match with errors.Is.
var (
	// ErrDuplicate: Enqueue refused a job ID that is still live (pending,
	// scheduled or in flight) or inside its uniqueness window.
	ErrDuplicate = errors.New("queue: duplicate job")
	// ErrEmpty: TryDequeue found no ready job.
	ErrEmpty = errors.New("queue: no ready job")
	// ErrLeaseLost: Ack, Nack, Release or Extend on a job whose lease was
	// recovered (it expired and the job was delivered again or dead
	// lettered) or which was deleted. The job's outcome is not recorded.
	ErrLeaseLost = errors.New("queue: lease lost")
	// ErrNotFound: no job with that ID in the state asked for.
	ErrNotFound = errors.New("queue: job not found")
	// ErrInvalid: bad input (empty or reserved queue name, negative delay,
	// bad priority, bad option, a payload that does not encode). Nothing
	// was written.
	ErrInvalid = errors.New("queue: invalid argument")
	// ErrTooLarge: the encoded job exceeds the queue's payload limit.
	// Nothing was written.
	ErrTooLarge = errors.New("queue: payload too large")
)

// Priority orders ready jobs: every High job is delivered before any Normal
// one, every Normal before any Low; FIFO within one priority. The integer
// is the seed's "priority" field.
type Priority int

// The three priorities of seed 001 (queue:n8n:priority:{high|normal|low}).
const (
	Low    Priority = -1
	Normal Priority = 0
	High   Priority = 1
)

// String returns the level name used in keys: "high", "normal" or "low".
func (p Priority) String() string {
	switch p {
	case High:
		return "high"
	case Normal:
		return "normal"
	case Low:
		return "low"
	}
	return fmt.Sprintf("Priority(%d)", int(p))
}

func parseLevel(s string) (Priority, bool) {
	switch s {
	case "high":
		return High, true
	case "normal":
		return Normal, true
	case "low":
		return Low, true
	}
	return 0, false
}

// Defaults of the options.
const (
	// DefaultLease is the visibility timeout of a delivered job (WithLease).
	DefaultLease = 30 * time.Second
	// DefaultMaxRetries is the retries after the first attempt (WithMaxRetries).
	DefaultMaxRetries = 5
	// DefaultMaxPayload is the largest encoded job JSON in bytes (WithMaxPayload).
	DefaultMaxPayload = 1 << 20
	// DefaultDeadCap is the most entries the dead-letter list keeps (WithDeadLetterCap).
	DefaultDeadCap = 10000
	// DeadTTL is the dead-letter list's lifetime (seed 001: 604800 s),
	// refreshed whenever a job is added to it.
	DeadTTL = 7 * 24 * time.Hour
	// wakeTTL bounds the wake-up list, which holds at most one token.
	wakeTTL = time.Minute
)

// NoRetries as EnqueueOptions.MaxRetries sends a job to the dead-letter
// list on its first failure.
const NoRetries = -1

var (
	//go:embed enqueue.lua
	enqueueSrc string
	//go:embed dequeue.lua
	dequeueSrc string
	//go:embed settle.lua
	settleSrc string
	//go:embed stats.lua
	statsSrc string
	//go:embed list.lua
	listSrc string
	//go:embed delete.lua
	deleteSrc string
	//go:embed requeue.lua
	requeueSrc string
	//go:embed purge.lua
	purgeSrc string

	enqueueScript = script.New(enqueueSrc)
	dequeueScript = script.New(dequeueSrc)
	settleScript  = script.New(settleSrc)
	statsScript   = script.New(statsSrc)
	listScript    = script.New(listSrc)
	deleteScript  = script.New(deleteSrc)
	requeueScript = script.New(requeueSrc)
	purgeScript   = script.New(purgeSrc)
)

// Option configures a Queue.
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
	err        error
}

// WithNamespace puts every key under ns (prefix and hash-tag mode).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithCodec encodes payloads with c instead of JSON. The job envelope stays
// JSON; a payload that is not valid JSON is stored base64-encoded.
func WithCodec(c codec.Codec) Option {
	return func(o *options) {
		if c == nil {
			o.err = fmt.Errorf("%w: nil codec", ErrInvalid)
		}
		o.codec = c
	}
}

// WithLease sets the visibility timeout of a delivered job (default 30 s):
// a job neither acked, failed, released nor extended within it is delivered
// again. Run extends leases while handlers run.
func WithLease(d time.Duration) Option {
	return func(o *options) {
		if d < 10*time.Millisecond {
			o.err = fmt.Errorf("%w: lease %v shorter than 10ms", ErrInvalid, d)
		}
		o.lease = d
	}
}

// WithMaxRetries sets the default number of retries after the first
// attempt (default 5) for jobs enqueued without their own.
func WithMaxRetries(n int) Option {
	return func(o *options) {
		if n < 0 {
			o.err = fmt.Errorf("%w: max retries %d", ErrInvalid, n)
		}
		o.maxRetries = n
	}
}

// WithMaxPayload sets the largest encoded job JSON (envelope and payload)
// in bytes (default 1 MiB); a larger job is refused with ErrTooLarge.
func WithMaxPayload(n int) Option {
	return func(o *options) {
		if n <= 0 {
			o.err = fmt.Errorf("%w: max payload %d", ErrInvalid, n)
		}
		o.maxPayload = n
	}
}

// WithDeadLetterCap bounds the dead-letter list (default 10,000 entries);
// the oldest entries are trimmed in the script that adds a new one.
func WithDeadLetterCap(n int) Option {
	return func(o *options) {
		if n <= 0 {
			o.err = fmt.Errorf("%w: dead-letter cap %d", ErrInvalid, n)
		}
		o.deadCap = n
	}
}

// WithBackoff sets the retry delay policy of Nack (default
// ExponentialBackoff(time.Second, 10*time.Minute)).
func WithBackoff(b Backoff) Option {
	return func(o *options) {
		if b == nil {
			o.err = fmt.Errorf("%w: nil backoff", ErrInvalid)
		}
		o.backoff = b
	}
}

// Queue is one named job queue holding payloads of type T. It is safe for
// concurrent use; any number of producers and consumers, in any number of
// processes, may share a queue name.
type Queue[T any] struct {
	client redis.UniversalClient
	name   string
	o      options
	isJSON bool // payloads are JSON: decode a job in one pass
	// keys of this queue; all share the hash tag {name}
	jobs, state, active, stats, dead, wake string
	levels                                 [3]string // high, normal, low
	all                                    []string  // dequeue/settle KEYS
}

var reserved = map[string]bool{"stats": true, "dlq": true}

// New returns the queue called name. The name is the hash tag of every key
// of the queue, so all of a queue's scripts run on one cluster slot. It
// fails with ErrInvalid for an empty name, or "stats" or "dlq" (which would
// make queue:{name}:... keys collide with queue:stats:{name} and
// queue:dlq:{name} when hash tags are off), and with keys.ErrInvalidKey
// or keys.ErrInvalidNamespace for names or prefixes that cannot be keys.
// New does no I/O.
func New[T any](client redis.UniversalClient, name string, opts ...Option) (*Queue[T], error) {
	o := options{codec: codec.JSON{}, lease: DefaultLease, maxRetries: DefaultMaxRetries,
		maxPayload: DefaultMaxPayload, deadCap: DefaultDeadCap, backoff: ExponentialBackoff(time.Second, 10*time.Minute), grace: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.err != nil {
		return nil, o.err
	}
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalid)
	}
	if err := o.ns.Validate(); err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	if name == "" || reserved[name] {
		return nil, fmt.Errorf("%w: queue name %q", ErrInvalid, name)
	}
	q := &Queue[T]{client: client, name: name, o: o}
	_, q.isJSON = o.codec.(codec.JSON)
	var err error
	build := func(t *keys.Template, args ...string) string {
		if err != nil {
			return ""
		}
		var k string
		k, err = t.Key(o.ns, args...)
		return k
	}
	q.jobs = build(jobsKey, name)
	q.state = build(stateKey, name)
	q.active = build(activeKey, name)
	q.stats = build(statsKey, name)
	q.dead = build(deadKey, name)
	q.wake = build(wakeKey, name)
	q.levels[0] = build(priorityKey, name, "high")
	q.levels[1] = build(priorityKey, name, "normal")
	q.levels[2] = build(priorityKey, name, "low")
	if err != nil {
		return nil, fmt.Errorf("queue: name %q: %w", name, err)
	}
	q.all = []string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.active, q.stats, q.dead, q.wake}
	return q, nil
}

// Name returns the queue's name.
func (q *Queue[T]) Name() string { return q.name }

// Lease returns the queue's visibility timeout.
func (q *Queue[T]) Lease() time.Duration { return q.o.lease }

func (q *Queue[T]) levelKey(p Priority) string {
	switch p {
	case High:
		return q.levels[0]
	case Low:
		return q.levels[2]
	}
	return q.levels[1]
}

func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }

// run runs s, wrapping errors with the operation and queue name (%w, so
// errors.Is(err, context.Canceled) keeps working).
func (q *Queue[T]) run(ctx context.Context, s *script.Script, op string, k []string, args ...any) (any, error) {
	v, err := s.Run(ctx, q.client, k, args...).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: %s %q: %w", op, q.name, err)
	}
	return v, nil
}
