package lock

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// Option configures a Client. Options are checked by New.
type Option func(*options)

type options struct {
	ns        keys.Namespace
	maxTTL    time.Duration
	fenceTTL  time.Duration
	owner     string
	pipelines int
	durable   call.Durability
	wakeups   bool
}

// WithNamespace puts every key under ns (a prefix, and the hash-tag mode).
//
// Default: the zero Namespace (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithMaxTTL sets the longest lease, permit or interval lease the client
// grants; longer requests fail with ErrInvalid. The default is the AI
// platform's maximum lock TTL (docs/ai-platform.md); no lease, permit or
// fair waiter's place lasts longer than a day.
//
// Default: 300s. Range: 1ms to 24h.
func WithMaxTTL(d time.Duration) Option { return func(o *options) { o.maxTTL = d } }

// WithFenceTTL sets how long a resource's fence counter key lives after its
// last acquisition: at least d, and at most d plus 1/4096 of it (see
// Fencing tokens in docs/lock.md). Fencing tokens stay strictly increasing
// after the key expired as long as the server clock never steps back by
// more than d; it must be at least the max TTL (WithMaxTTL).
//
// Default: 1h. Range: the max TTL to 720h (30 days).
func WithFenceTTL(d time.Duration) Option { return func(o *options) { o.fenceTTL = d } }

// WithOwner sets a label (a host or worker name) that starts every owner ID
// this client writes, so that a lock's value says who holds it. It must be
// valid UTF-8 of at most 64 bytes without ':' or control bytes.
//
// Default: none (owner IDs are 24 random hex digits).
func WithOwner(label string) Option { return func(o *options) { o.owner = label } }

// WithPipelining sets how many round trips one Client keeps in flight at
// once for its lease operations (auto-pipelining): Acquire, TryAcquire,
// Release, Refresh and TTL of locks and permits, the fair queue, Held,
// Claim and LastRun. A call made while none is in flight is sent at once,
// on its own. Calls made while some are in flight wait; they go out
// together, as one pipeline, when a round trip comes back, or at once in
// a new round trip (up to n) when as many wait as are in flight. Every
// call is still one atomic script with its own reply; many goroutines
// locking at once share the network reads and writes, which under load
// cost the client and Redis more than the scripts do (see
// bench/RESULTS.md). n = 0 turns auto-pipelining off (every call is its
// own round trip, sent at once); n outside the range fails New with
// ErrInvalid.
//
// On a Redis Cluster the n round trips are shared by the masters, each of
// which may always have one in flight, so a slow master holds up only the
// calls for resources it owns. When a connection breaks
// mid-pipeline, go-redis resends the whole pipeline; what a resent call
// does is in docs/lock.md (Guarantees in full).
//
// Default: 4. Range: 0 to 1024.
func WithPipelining(n int) Option { return func(o *options) { o.pipelines = n } }

// WithDurability makes the writes that hand out or extend a lease wait, in
// their own round trip, until replicas replicas acknowledged them, for at
// most timeout: Acquire and TryAcquire (fair or not), Refresh (and the
// watchdog's), semaphore acquires and refreshes, and Interval.Claim. The
// script and a WAIT go out as one pipeline to the resource's master (these
// calls are then not auto-pipelined). When fewer replicas acknowledge in
// time the call returns its result (the *Lock, held; the Run) with an
// error matching ErrNotDurable: a failover may still lose that lease.
// Release does not wait: a lost release only leaves the lease to expire.
// replicas is 1 to 64 and timeout 1ms to 1 min and under the client's
// ReadTimeout, and the client must be a *redis.Client or a
// *redis.ClusterClient, else New fails with ErrInvalid. See Failover and
// durability in docs/lock.md for what is lost without it.
//
// Default: off.
func WithDurability(replicas int, timeout time.Duration) Option {
	return func(o *options) { o.durable = call.Durability{Replicas: replicas, Timeout: timeout} }
}

// WithWakeups makes a release wake the callers that wait for the
// resource: the release of a lease publishes, in its script, on the
// sharded channel lock:released:{resource_type}:{resource_id} (SPUBLISH,
// on the resource's own slot, so only that shard's node relays it), and a
// waiting call, once an attempt finds the resource held, subscribes to it
// (SSUBSCRIBE, one connection per waiting call) and tries again as soon as
// a release is announced, instead of sleeping out its backoff. Every kind
// of lease does so: a lock (Acquire), each resource of a multi-lock
// (AcquireMulti waits on the resource it found held), a read-write lock
// (the writer's release wakes readers and writers; a reader's wakes a
// waiting writer only when it leaves no live reader; a waiting writer
// that gives up wakes the readers it turned away) and a semaphore's
// permits (Acquire, AcquireN). The kinds share the channel of a resource,
// so a waiter may be woken by another kind's release: it only tries again. The RetryStrategy
// still bounds every wait, so a message lost (a reconnect, a failover, a
// releaser without this option, a lease that expired) costs one backoff,
// never the lock. It needs Redis 7.0 or newer for sharded pub/sub; where
// SSUBSCRIBE fails (older servers, miniredis) Acquire polls as without
// it. Both the releasing and the waiting clients need the option.
//
// Default: off.
func WithWakeups() Option { return func(o *options) { o.wakeups = true } }

// New returns a Client over rdb. It fails with ErrInvalid on a bad option,
// a nil client, or a go-redis client without ContextTimeoutEnabled (which
// would ignore the deadlines of every call); it does not contact Redis.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	const op = "new"
	o, err := call.Configure(pkg, op, rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	if err := o.durable.Check(pkg, op, "WithDurability", rdb); err != nil {
		return nil, err
	}
	run := call.NewRunner(rdb, o.pipelines)
	run.SetDurability(o.durable)
	return &Client{run: run, opt: o, fenceArg: fenceKeep(o.fenceTTL), now: time.Now}, nil
}

// defaults are the options of a Client built without any.
func defaults() options {
	return options{maxTTL: defaultMaxTTL, fenceTTL: defaultFenceTTL, pipelines: call.DefaultLanes}
}

// check validates the options for New and NewInspector.
func (o *options) check(op string) error {
	switch {
	case o.maxTTL < time.Millisecond || o.maxTTL > maxLease:
		return pkg.Invalidf(op, "max TTL %v outside [1ms, %v]", o.maxTTL, maxLease)
	case o.fenceTTL < o.maxTTL || o.fenceTTL > maxFenceTTL:
		return pkg.Invalidf(op, "fence TTL %v outside [max TTL %v, %v]", o.fenceTTL, o.maxTTL, maxFenceTTL)
	case len(o.owner) > 64 || !utf8.ValidString(o.owner) ||
		strings.ContainsFunc(o.owner, func(r rune) bool { return r == ':' || r < 0x20 || r == 0x7f }):
		return pkg.Invalidf(op, "owner label %q", o.owner)
	}
	if err := pkg.CheckLanes(op, o.pipelines); err != nil {
		return err
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}

// fenceKeep is the TTL, in ms, that a fence write sets when it sets one:
// the fence TTL plus 1/4096 of it, rounded up, so that the key outlives
// every token it stores by at least the fence TTL although most writes
// keep the TTL the key has (see lib.lua).
func fenceKeep(d time.Duration) int64 {
	m := unit.MsCeil(d)
	return m + (m+4095)/4096
}
