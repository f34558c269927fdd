package queue

import (
	"encoding/json"
	"time"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// Defaults and bounds of the options.
const (
	// defaultLease is the visibility timeout of a delivered job (WithLease).
	defaultLease = 30 * time.Second
	// minLease and maxLease bound WithLease.
	minLease = 10 * time.Millisecond
	maxLease = 24 * time.Hour
	// defaultRetries is the retries after the first attempt (WithMaxRetries).
	defaultRetries = 5
	// maxRetries bounds WithMaxRetries and WithJobMaxRetries.
	maxRetries = 100000
	// defaultPayload is the largest encoded job JSON in bytes (WithMaxPayload).
	defaultPayload = 1 << 20
	// maxPayload bounds WithMaxPayload (Redis's largest string).
	maxPayload = 512 << 20
	// defaultDeadCap is the most entries the dead-letter list keeps (WithDeadLetterCap).
	defaultDeadCap = 10000
	// maxDeadCap bounds WithDeadLetterCap: the scripts that look a job up
	// in the dead-letter list scan it.
	maxDeadCap = 100000
	// deadTTL is the dead-letter list's lifetime (the AI platform's
	// 604800 s, docs/ai-platform.md), refreshed whenever a job is added
	// to it.
	deadTTL = 7 * 24 * time.Hour
	// defaultGrace is how long Run lets handlers finish after its
	// context ends (WithShutdownGrace).
	defaultGrace = 30 * time.Second
	// maxGrace bounds WithShutdownGrace.
	maxGrace = 24 * time.Hour
	// maxDelay bounds how far ahead a job can be scheduled (WithDelay,
	// WithProcessAt, WithUnique, a Backoff's delay): ready times are
	// scored in ms × 1000, which must stay exact in a double.
	maxDelay = 366 * 24 * time.Hour
	// defaultPipelines is the round trips of Enqueue a Queue keeps in
	// flight before further calls wait and share a pipeline
	// (WithPipelining).
	defaultPipelines = 2
	// maxEvents bounds WithEvents.
	maxEvents = 1 << 24
	// maxRetention bounds WithRetention.
	maxRetention = 30 * 24 * time.Hour
	// defaultRetainCap is the most finished jobs WithRetention keeps per
	// queue unless WithRetentionCap says otherwise.
	defaultRetainCap = 10000
	// maxRetainCap bounds WithRetentionCap.
	maxRetainCap = 1000000
	// maxResult bounds the JSON of a job's result (Job.SetResult).
	maxResult = 64 << 10
	// maxProgress bounds the JSON of a job's progress (Job.SetProgress).
	maxProgress = 4 << 10
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
	noMemo     bool
	seed       bool // WithSeedConsumers
	// global limits (WithGlobalConcurrency, WithRateLimit,
	// WithGroupLimits, WithGroupLimit); zero: none
	concurrency int
	rate        Rate
	groupLimit  GroupLimit
	groupLimits map[string]GroupLimit
	badGroup    string // a WithGroupLimit group WithGroup would refuse
}

// Rate is at most N starts per period Per: fixed windows of the server
// clock, [k×Per, (k+1)×Per) in Unix ms, each allowing N leases.
type Rate struct {
	N   int
	Per time.Duration
}

// GroupLimit bounds the jobs of one group (WithGroup), across every
// consumer of the queue: at most Concurrency leased at once (0: no cap)
// and at most Rate.N leased per Rate.Per (zero Rate: none).
type GroupLimit struct {
	Concurrency int
	Rate        Rate
}

// Bounds of the global limits.
const (
	// maxLimit bounds a concurrency cap and a rate's N.
	maxLimit = 1000000
	// minRatePeriod and maxRatePeriod bound a rate's period.
	minRatePeriod = time.Millisecond
	maxRatePeriod = 24 * time.Hour
	// maxGroupLimits bounds the groups given their own limits
	// (WithGroupLimit).
	maxGroupLimits = 1000
	// groupScan is how many ready jobs one dequeue looks at, at most,
	// when group limits are set: jobs of groups at their limit are
	// skipped (they keep their place), so another group's job is found
	// behind up to this many of theirs. A dequeue that has found a job
	// stops sooner once every group it saw is at its limit, and so is
	// every group that the last whole read (at most 100 ms before) found;
	// one that has found none reads on to groupScan.
	groupScan = 1000
)

// WithNamespace puts every key under ns (prefix and hash-tag mode).
//
// Default: the zero keys.Namespace (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithCodec encodes payloads with c instead of JSON (codec.JSON). The job
// envelope stays JSON; a payload that is not valid JSON is stored
// base64-encoded under "payload_bytes". A nil codec fails New.
//
// Default: codec.JSON.
func WithCodec(c codec.Codec) Option { return func(o *options) { o.codec = c } }

// WithLease sets the visibility timeout of a delivered job (default
// 30 s; 10 ms to 24 h): a job neither acked,
// failed, released nor extended within it is delivered again. Run extends
// leases while handlers run.
//
// Default: 30s. Range: 10ms to 24h.
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithMaxRetries sets the default number of retries after the first
// attempt (default 5; 0 to 100,000) for jobs
// enqueued without WithJobMaxRetries.
//
// Default: 5. Range: 0 to 100000.
func WithMaxRetries(n int) Option { return func(o *options) { o.maxRetries = n } }

// WithMaxPayload sets the largest encoded job JSON (envelope and payload)
// in bytes (default 1 MiB, at most 512 MiB, Redis's largest string); a larger job is
// refused with ErrTooLarge.
//
// Default: 1048576 (1 MiB). Range: 1 to 536870912 (512 MiB).
func WithMaxPayload(n int) Option { return func(o *options) { o.maxPayload = n } }

// WithDeadLetterCap bounds the dead-letter list (default 10,000 entries,
// at most 100,000: the scripts that look a job up there scan it); the oldest entries are trimmed in the script that
// adds a new one.
//
// Default: 10000. Range: 1 to 100000.
func WithDeadLetterCap(n int) Option { return func(o *options) { o.deadCap = n } }

// WithBackoff sets the retry delay policy of Nack and Run (default
// ExponentialBackoff(time.Second, 10*time.Minute)). A nil Backoff fails
// New.
//
// Default: ExponentialBackoff(time.Second, 10*time.Minute).
func WithBackoff(b Backoff) Option { return func(o *options) { o.backoff = b } }

// WithShutdownGrace sets how long Run lets running handlers finish after
// its context is cancelled (default 30 s, 0 to 24 h) before
// cancelling their contexts with cause ErrShutdown.
//
// Default: 30s. Range: 0 to 24h.
func WithShutdownGrace(d time.Duration) Option { return func(o *options) { o.grace = d } }

// WithErrorHandler receives the errors Run survives: Redis unreachable,
// a corrupt job dead-lettered, a failed ack (the job is then redelivered
// after its lease), outcomes refused because the lease was lost (matching
// ErrLeaseLost: the job was recovered, deleted or purged meanwhile),
// outcomes written but not acknowledged by enough replicas (matching
// ErrNotDurable, with WithDurability), and those of RunSchedules. The
// default logs each with slog.Default (message "queue: worker error",
// attributes "queue" and "err"; level Warn for ErrLeaseLost and
// ErrNotDurable, Error otherwise); f replaces that, and
// WithErrorHandler(func(error) {}) silences them. f must be safe for
// concurrent use.
//
// Default: log with slog.Default.
func WithErrorHandler(f func(error)) Option { return func(o *options) { o.onError = f } }

// WithPipelining sets how many round trips of Enqueue one Queue keeps in
// flight at once (auto-pipelining). An Enqueue made while none is in
// flight is sent at once, on its own. Calls made while some are in flight
// wait; they go out together, as one pipeline, when a round trip comes
// back, or at once in a new round trip (up to n) when as many wait as are
// in flight. Each Enqueue is still one atomic script with its own reply;
// many producers at once share the network reads and writes, which cost
// the client and Redis more than the script does. Without this option a
// Queue keeps 2; n = 0 turns auto-pipelining off (every
// Enqueue is its own round trip); n outside 0..1024 fails New with
// ErrInvalid. When a connection breaks mid-pipeline, go-redis resends the
// whole pipeline: every Enqueue in it reports its first outcome (see
// "Idempotent under retry" in docs/queue.md).
//
// Default: 2. Range: 0 to 1024.
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
// *redis.ClusterClient, else New fails with ErrInvalid. What a failover
// loses without it, measured, is in docs/queue.md ("Failover and
// durability").
//
// Default: off.
func WithDurability(replicas int, timeout time.Duration) Option {
	return func(o *options) { o.durability = call.Durability{Replicas: replicas, Timeout: timeout} }
}

// WithRetention keeps every job that finishes (acked: "completed") for d
// after it finished, with its result (Job.SetResult) and its last
// progress (Job.SetProgress): Peek and List(Completed) return it. Entries
// live in one hash per queue on the queue's slot, indexed by expiry; the
// script that adds entries drops those past d and the oldest beyond the
// cap (WithRetentionCap, default 10,000), and both keys expire d
// after the last write. d is 1ms to 30 days; without this option
// (the default) nothing is kept and an ack costs what it always did.
//
// Default: off. Range: 1ms to 720h.
func WithRetention(d time.Duration) Option { return func(o *options) { o.retention = d } }

// WithRetentionCap bounds how many finished jobs WithRetention keeps (1 to
// 1,000,000; default 10,000): the oldest are dropped first.
//
// Default: 10000. Range: 1 to 1000000.
func WithRetentionCap(n int) Option { return func(o *options) { o.retainCap = n } }

// WithMiddleware wraps the handler Run is given with mw, in order: the
// first is the outermost, so it runs first and returns last. A
// middleware sees the handler's context (lease, Cancel, timeout) and the
// job (its Headers: trace context, tenant, ...), and may return a
// handler that changes either. Several WithMiddleware add up. The type
// parameter must be the queue's payload type, else New fails with
// ErrInvalid; a nil middleware fails New too. Without it Run calls the
// handler directly.
//
// Default: none.
func WithMiddleware[T any](mw ...func(Handler[T]) Handler[T]) Option {
	return func(o *options) {
		for _, m := range mw {
			o.middleware = append(o.middleware, m)
		}
	}
}

// WithEvents makes the queue's scripts record lifecycle events on a
// Redis Stream of the queue's slot, queue:{queue_name}:events, capped at
// about n entries (XADD MAXLEN ~ n; 1 to 2^24): enqueued,
// started, progress, completed, failed, retried, dead and cancelled, each
// written by the script that makes the change, in its atomic step. Read
// them with ReadEvents, resuming from the last event's ID: unlike pub/sub
// nothing is missed while a reader is away, unless the stream was trimmed
// past its position. Every producer and consumer of the queue should
// have the option (an instance without it records nothing); without it
// (the default) no script writes an event.
//
// Default: off. Range: 1 to 16777216.
func WithEvents(n int) Option { return func(o *options) { o.events = n } }

// WithoutReplayMemo drops the reply memo from Enqueue and EnqueueBatch
// when the job ID is generated (no WithID): one key fewer written per
// enqueue (about 150 bytes kept for 3 minutes, and a fifth to a quarter of the
// enqueue's Redis CPU: see bench/RESULTS.md). A request that go-redis
// resends after its reply was lost then finds its job by ID and reports
// it enqueued, as with the memo, unless the job already left the jobs
// hash between the two runs (acked, dead-lettered, deleted, purged or
// cancelled, WithRetention or not): the resend then enqueues it again, so
// it may run twice.
// Handlers of an at-least-once queue (a lease that runs out redelivers a
// job too) already tolerate that. An enqueue WithID keeps its memo: a
// caller's ID is not this request's own, and a resend must not be told
// ErrDuplicate.
//
// Default: off (the memo is written).
func WithoutReplayMemo() Option { return func(o *options) { o.noMemo = true } }

// WithSeedConsumers says that consumers of the AI platform's own code
// (docs/ai-platform.md) still pop the queue's executions list
// (queue:{queue_name}:executions: an RPOP of the item JSON), so that Go
// and Node share the list during a migration:
//
//   - the wake-up token moves off that list to queue:{queue_name}:inbox,
//     which idle consumers of this package block on, so no consumer of the
//     AI platform ever pops the token as a job;
//   - every dequeue reads the executions list and adopts the items there
//     (each item goes to one consumer, Go or Node); an idle consumer finds
//     an item pushed there within 250 ms, its longest wait;
//   - Handoff is allowed: it pushes a job onto that list in the AI
//     platform's item format, for a consumer of either side.
//
// Every instance of the queue that writes (producers, workers,
// schedulers, admin tools) must then have the option; what instances
// without it left in the inbox is adopted. See "Sharing the list with
// Node" in docs/queue.md.
//
// Default: off (the token is kept in the executions list).
func WithSeedConsumers() Option { return func(o *options) { o.seed = true } }

// WithGlobalConcurrency caps the jobs of the queue leased at once, across
// every consumer and process, at n (1 to 1,000,000): the dequeue script
// counts the leases in the active set (after recovering expired ones)
// in the same atomic step that adds one, so an ack, a failure, a release
// or an expired lease (a crashed worker's) frees its place. Run's
// prefetched jobs hold leases too: the cap counts them. Every consumer
// of the queue should have the same limits (a consumer without them
// leases regardless). Without it the dequeue path pays nothing.
//
// Default: off. Range: 1 to 1000000.
func WithGlobalConcurrency(n int) Option { return func(o *options) { o.concurrency = n } }

// WithRateLimit lets the queue's consumers lease at most n jobs (1 to
// 1,000,000) per period per (1ms to 24h, whole milliseconds), counted in
// fixed windows of the server clock in a key of the queue's slot,
// queue:{queue_name}:rate, by the dequeue script that leases them. A
// consumer held back by the limit waits until the window ends.
//
// Default: off. Range: 1 to 1000000.
func WithRateLimit(n int, per time.Duration) Option {
	return func(o *options) { o.rate = Rate{N: n, Per: per} }
}

// WithGroupLimits sets the limits of every group (WithGroup) that has no
// limits of its own (WithGroupLimit). The dequeue script counts each
// group's leases (queue:{queue_name}:gactive:{group}) and starts in the
// current window (queue:{queue_name}:grate:{group}); a ready job whose
// group is at its limit is skipped, keeping its place, so other groups'
// jobs behind it are served (looking at up to 1,000 ready jobs per
// dequeue), and the groups found ready are served in turn, by name,
// starting after the group served last (round-robin across dequeues and
// consumers), oldest first within a group. Jobs with no group have only
// the queue's limits.
//
// Default: off.
func WithGroupLimits(l GroupLimit) Option { return func(o *options) { o.groupLimit = l } }

// WithGroupLimit gives group g its own limits instead of WithGroupLimits'
// (up to 1,000 groups; g as WithGroup takes it).
//
// Default: the WithGroupLimits limits.
func WithGroupLimit(g string, l GroupLimit) Option {
	return func(o *options) {
		if !validGroup(g) {
			o.badGroup = g
			return
		}
		if o.groupLimits == nil {
			o.groupLimits = map[string]GroupLimit{}
		}
		o.groupLimits[g] = l
	}
}

// checkRate validates a rate (zero: none).
func checkRate(op, what string, r Rate) error {
	if r == (Rate{}) {
		return nil
	}
	if r.N < 1 || r.N > maxLimit || r.Per < minRatePeriod || r.Per > maxRatePeriod || r.Per%time.Millisecond != 0 {
		return pkg.Invalidf(op, "%s rate %d per %v: want 1 to %d per whole ms in [%v, %v]", what, r.N, r.Per, maxLimit, minRatePeriod, maxRatePeriod)
	}
	return nil
}

// checkLimits validates the global limits.
func (o *options) checkLimits(op string) error {
	if o.concurrency < 0 || o.concurrency > maxLimit {
		return pkg.Invalidf(op, "global concurrency %d outside [1, %d]", o.concurrency, maxLimit)
	}
	if o.badGroup != "" {
		return pkg.Invalidf(op, "WithGroupLimit: group %.64q is not a group name (see WithGroup)", o.badGroup)
	}
	if len(o.groupLimits) > maxGroupLimits {
		return pkg.Invalidf(op, "%d groups with their own limits, at most %d", len(o.groupLimits), maxGroupLimits)
	}
	if err := checkRate(op, "queue", o.rate); err != nil {
		return err
	}
	for g, l := range o.groupLimits {
		if err := checkGroupLimit(op, g, l); err != nil {
			return err
		}
	}
	return checkGroupLimit(op, "default", o.groupLimit)
}

func checkGroupLimit(op, g string, l GroupLimit) error {
	if l.Concurrency < 0 || l.Concurrency > maxLimit {
		return pkg.Invalidf(op, "group %s concurrency %d outside [0, %d]", g, l.Concurrency, maxLimit)
	}
	return checkRate(op, "group "+g, l.Rate)
}

// limitSpec is the JSON the dequeue script reads its limits from ("" for
// none: the script then takes its plain path): c, r, p the queue's cap
// and rate; g the default group limit, o the groups' own; with group
// limits, the tuning of the script's pick (scan, look, seen_ms,
// seen_max, glen). The keys the limits count in go in KEYS.
func (o *options) limitSpec() string {
	type lim struct {
		C int   `json:"c,omitempty"`
		R int   `json:"r,omitempty"`
		P int64 `json:"p,omitempty"`
	}
	gl := func(l GroupLimit) *lim {
		if l == (GroupLimit{}) {
			return nil
		}
		return &lim{C: l.Concurrency, R: l.Rate.N, P: unit.MsCeil(l.Rate.Per)}
	}
	spec := struct {
		lim
		G       *lim            `json:"g,omitempty"`
		O       map[string]*lim `json:"o,omitempty"`
		Scan    int             `json:"scan,omitempty"`
		Look    int             `json:"look,omitempty"`
		SeenMS  int64           `json:"seen_ms,omitempty"`
		SeenMax int             `json:"seen_max,omitempty"`
		GLen    int             `json:"glen,omitempty"`
	}{lim: lim{C: o.concurrency, R: o.rate.N, P: unit.MsCeil(o.rate.Per)}, G: gl(o.groupLimit)}
	for g, l := range o.groupLimits {
		if spec.O == nil {
			spec.O = map[string]*lim{}
		}
		x := gl(l)
		if x == nil {
			x = &lim{} // no limits for this group, not the default's
		}
		spec.O[g] = x
	}
	if spec.lim == (lim{}) && spec.G == nil && spec.O == nil {
		return ""
	}
	if spec.G != nil || spec.O != nil {
		spec.Scan, spec.Look, spec.SeenMax, spec.GLen = groupScan, groupLook, groupSeenMax, maxGroupLen
		spec.SeenMS = unit.MsCeil(groupSeenFor)
	}
	b, _ := json.Marshal(spec)
	return string(b)
}

func defaultOptions() options {
	return options{
		codec: codec.JSON{}, lease: defaultLease, maxRetries: defaultRetries, maxPayload: defaultPayload,
		deadCap: defaultDeadCap, backoff: ExponentialBackoff(time.Second, 10*time.Minute), grace: defaultGrace,
		pipelines: defaultPipelines, retainCap: defaultRetainCap,
	}
}

// check validates the options for New.
func (o *options) check(op string) error {
	switch {
	case o.codec == nil:
		return pkg.Invalidf(op, "nil codec")
	case o.backoff == nil:
		return pkg.Invalidf(op, "nil backoff")
	case o.lease < minLease || o.lease > maxLease:
		return pkg.Invalidf(op, "lease %v outside [%v, %v]", o.lease, minLease, maxLease)
	case o.maxRetries < 0 || o.maxRetries > maxRetries:
		return pkg.Invalidf(op, "max retries %d outside [0, %d]", o.maxRetries, maxRetries)
	case o.maxPayload < 1 || o.maxPayload > maxPayload:
		return pkg.Invalidf(op, "max payload %d outside [1, %d]", o.maxPayload, maxPayload)
	case o.deadCap < 1 || o.deadCap > maxDeadCap:
		return pkg.Invalidf(op, "dead-letter cap %d outside [1, %d]", o.deadCap, maxDeadCap)
	case o.grace < 0 || o.grace > maxGrace:
		return pkg.Invalidf(op, "shutdown grace %v outside [0, %v]", o.grace, maxGrace)
	case o.retention < 0 || o.retention > maxRetention || (o.retention > 0 && o.retention < time.Millisecond):
		return pkg.Invalidf(op, "retention %v outside [1ms, %v]", o.retention, maxRetention)
	case o.retainCap < 1 || o.retainCap > maxRetainCap:
		return pkg.Invalidf(op, "retention cap %d outside [1, %d]", o.retainCap, maxRetainCap)
	case o.events < 0 || o.events > maxEvents:
		return pkg.Invalidf(op, "events length %d outside [1, %d]", o.events, maxEvents)
	}
	if err := pkg.CheckLanes(op, o.pipelines); err != nil {
		return err
	}
	if err := o.checkLimits(op); err != nil {
		return err
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}
