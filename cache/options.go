package cache

import (
	"context"
	"time"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Bounds and defaults of the options. A value outside its bounds fails New
// (or NewStore) with ErrInvalid.
const (
	// defaultMaxTTL is the longest freshness (and the longest grace) an
	// entry gets unless WithMaxTTL says otherwise (the AI platform's
	// maximum API cache TTL, 86400s).
	defaultMaxTTL = 24 * time.Hour
	// maxTTL bounds WithMaxTTL.
	maxTTL = 30 * 24 * time.Hour
	// defaultLease is how long a loading process holds an entry's lease
	// between heartbeats (it renews it every third of that while the
	// loader runs); when the process dies, another takes over after it.
	defaultLease = 5 * time.Second
	// minLease and maxLease bound WithLease.
	minLease = 30 * time.Millisecond
	maxLease = 5 * time.Minute
	// defaultLoadTimeout bounds one load (the loader and its write-back).
	defaultLoadTimeout = 30 * time.Second
	// maxLoadTimeout bounds WithLoadTimeout.
	maxLoadTimeout = 10 * time.Minute
	// defaultMaxValueSize is the largest encoded value stored unless
	// WithMaxValueSize says otherwise.
	defaultMaxValueSize = 1 << 20
	// maxValueSize bounds WithMaxValueSize.
	maxValueSize = 64 << 20
	// defaultBeta is XFetch's β: 1 refreshes a key about one recompute
	// time before it expires, on average, when it is read often.
	defaultBeta = 1.0
	// maxBeta bounds WithBeta.
	maxBeta = 100.0
	// defaultHitFlush is how often the counted hits are added to the
	// entries' metadata.
	defaultHitFlush = time.Second
	// maxTags bounds the tags of one entry.
	maxTags = 32
	// maxLocalEntries bounds WithLocal's size.
	maxLocalEntries = 10_000_000
	// defaultLocalMaxAge is how long the local tier keeps a value without
	// news from Redis unless WithLocal says otherwise.
	defaultLocalMaxAge = time.Second
)

// errorHook receives what a Store cannot return to a caller (see
// WithErrorHook).
type errorHook = func(ctx context.Context, key string, err error)

// Option configures a Store or a Cache. Options only record; New and
// NewStore check them.
type Option func(*options)

type options struct {
	ns           keys.Namespace
	codec        codec.Codec
	policy       *Policy
	grace        time.Duration
	staleOnError bool
	negTTL       time.Duration
	beta         float64
	lease        time.Duration
	loadTimeout  time.Duration
	maxValue     int
	maxTTL       time.Duration
	hitFlush     time.Duration
	noHits       bool
	localSize    int
	localAge     time.Duration
	hook         errorHook
	lanes        int
}

func defaults() options {
	return options{
		beta: defaultBeta, lease: defaultLease, loadTimeout: defaultLoadTimeout,
		maxValue: defaultMaxValueSize, maxTTL: defaultMaxTTL, hitFlush: defaultHitFlush,
		lanes: call.DefaultLanes,
	}
}

// WithNamespace puts every key and the events channel under ns.
//
// Default: the zero Namespace (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithCodec sets how a Cache encodes its values. A Store stores bytes and
// ignores it.
//
// Default: codec.JSON.
func WithCodec(c codec.Codec) Option { return func(o *options) { o.codec = c } }

// WithPolicy sets a Cache's per-endpoint freshness. SeedPolicy returns the
// AI platform's table. A Store ignores it.
//
// Default: every endpoint fresh for 60s (the AI platform's default).
func WithPolicy(p Policy) Option { return func(o *options) { o.policy = &p } }

// WithGrace keeps each entry for d after its freshness ends, during which
// it is served stale while one background refresh (one in all instances)
// replaces it: stale-while-revalidate. 0 turns it off. A policy rule's
// Grace overrides it for its endpoints.
//
// Default: 0 (off). Range: 0 to the max TTL.
func WithGrace(d time.Duration) Option { return func(o *options) { o.grace = d } }

// WithStaleOnError serves a stale value still within its grace when the
// loader fails, instead of the loader's error (which goes to the error
// hook). It needs a grace window (WithGrace or a rule's Grace).
//
// Default: off.
func WithStaleOnError() Option { return func(o *options) { o.staleOnError = true } }

// WithNegativeTTL caches "not found" (a loader returning ErrNotFound) for
// d, so that repeated lookups of a missing value do not reach the loader.
// 0 caches nothing; other loader errors are never cached.
//
// Default: 0 (off). Range: 0 to the max TTL.
func WithNegativeTTL(d time.Duration) Option { return func(o *options) { o.negTTL = d } }

// WithBeta sets XFetch's β (0 turns early refresh off). A read of a fresh
// entry refreshes it early, in the background, with probability
// exp(-remaining/(β·delta)), where delta is how long its last load took;
// larger β refreshes earlier, and 1 about one recompute time before the
// entry expires, on average, when it is read often.
//
// Default: 1. Range: 0 to 100.
func WithBeta(beta float64) Option { return func(o *options) { o.beta = beta } }

// WithLease sets how long a loading process holds an entry's lease without
// renewing it (rounded up to whole milliseconds; the loader renews it
// every third of that while it runs). Other processes wait for its value
// meanwhile; if it dies, one of them takes over when the lease runs out.
//
// Default: 5s. Range: 30ms to 5m.
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithLoadTimeout bounds one load (the loader and its write-back): the
// loader's context ends after d, whatever the callers' contexts do.
//
// Default: 30s. Range: 1ms to 10m.
func WithLoadTimeout(d time.Duration) Option { return func(o *options) { o.loadTimeout = d } }

// WithMaxValueSize sets the largest encoded value stored, in bytes. Set
// fails with ErrInvalid beyond it; a loaded value beyond it is returned,
// not stored, and reported to the error hook.
//
// Default: 1 MiB (1 << 20). Range: 1 to 64 MiB (64 << 20).
func WithMaxValueSize(n int) Option { return func(o *options) { o.maxValue = n } }

// WithMaxTTL sets the longest freshness of an entry, and the longest
// grace; policies, options and per-call TTLs beyond it fail with
// ErrInvalid. An entry lives at most twice that. The default is the AI
// platform's maximum API cache TTL (86400s).
//
// Default: 24h. Range: 1ms to 720h (30 days).
func WithMaxTTL(d time.Duration) Option { return func(o *options) { o.maxTTL = d } }

// WithHitFlush sets how often hits counted in memory are added to the
// entries' "hits" field, in one pipeline per flush.
//
// Default: 1s. Range: 10ms to 1h.
func WithHitFlush(d time.Duration) Option { return func(o *options) { o.hitFlush = d } }

// WithoutHitCounts turns hit counting off: "hits" stays 0.
//
// Default: off (hits are counted).
func WithoutHitCounts() Option { return func(o *options) { o.noHits = true } }

// WithLocal adds a bounded in-process tier of up to size entries (0 to
// 10,000,000; 0 is off), each kept at most maxAge (0 means 1s; at most an
// hour) and never past its freshness in Redis. Set, Delete and
// InvalidateTag in any instance publish on the events channel and every
// local tier drops what they changed, so a local value is stale at most
// for the message's delivery, or maxAge when a message is lost (Redis
// pub/sub is at most once). On a redis.Ring the Store subscribes on every
// shard (a connection each).
//
// Default: off.
func WithLocal(size int, maxAge time.Duration) Option {
	return func(o *options) { o.localSize, o.localAge = size, maxAge }
}

// WithErrorHook sets the function that receives what a Store cannot
// return to a caller: an entry that does not decode (an error matching
// keys.ErrCorrupt that names the key; the entry is reloaded), a failed
// background refresh, a failed hit flush, a malformed event. key is the
// Redis key concerned, or "".
//
// Default: none (such errors are dropped).
func WithErrorHook(h func(ctx context.Context, key string, err error)) Option {
	return func(o *options) { o.hook = h }
}

// WithPipelining sets how many round trips one Store keeps in flight
// before further calls wait and share a pipeline (0 sends every call on
// its own): one count for the plain reads of hits and the scripts of
// loads and writes, which share batches, another for untagged Sets (one
// MULTI/EXEC each). Each call keeps its own replies; on a cluster the
// masters share the count, each of which may always have one in flight.
// Everything shared is harmless to send twice (reads, or scripts that
// recognise their own ID): a pipeline go-redis resends after a broken
// connection changes nothing.
//
// Default: 4. Range: 0 to 1024.
func WithPipelining(n int) Option { return func(o *options) { o.lanes = n } }

// check validates the options for op.
func (o *options) check(op string) error {
	switch {
	case o.maxTTL < time.Millisecond || o.maxTTL > maxTTL:
		return pkg.Invalidf(op, "max TTL %v outside [1ms, %v]", o.maxTTL, maxTTL)
	case o.grace < 0 || o.grace > o.maxTTL:
		return pkg.Invalidf(op, "grace %v outside [0, max TTL %v]", o.grace, o.maxTTL)
	case o.negTTL < 0 || o.negTTL > o.maxTTL:
		return pkg.Invalidf(op, "negative TTL %v outside [0, %v]", o.negTTL, o.maxTTL)
	case !(o.beta >= 0 && o.beta <= maxBeta):
		return pkg.Invalidf(op, "beta %v outside [0, %v]", o.beta, maxBeta)
	case o.lease < minLease || o.lease > maxLease:
		return pkg.Invalidf(op, "lease %v outside [%v, %v]", o.lease, minLease, maxLease)
	case o.loadTimeout < time.Millisecond || o.loadTimeout > maxLoadTimeout:
		return pkg.Invalidf(op, "load timeout %v outside [1ms, %v]", o.loadTimeout, maxLoadTimeout)
	case o.maxValue < 1 || o.maxValue > maxValueSize:
		return pkg.Invalidf(op, "max value size %d outside [1, %d]", o.maxValue, maxValueSize)
	case o.hitFlush < 10*time.Millisecond || o.hitFlush > time.Hour:
		return pkg.Invalidf(op, "hit flush %v outside [10ms, 1h]", o.hitFlush)
	case o.localSize < 0 || o.localSize > maxLocalEntries:
		return pkg.Invalidf(op, "local size %d outside [0, %d]", o.localSize, maxLocalEntries)
	case o.localAge < 0 || o.localAge > time.Hour:
		return pkg.Invalidf(op, "local max age %v outside [0, 1h]", o.localAge)
	}
	if err := pkg.CheckLanes(op, o.lanes); err != nil {
		return err
	}
	if o.localAge == 0 {
		o.localAge = defaultLocalMaxAge
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}
