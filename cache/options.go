package cache

import (
	"context"
	"time"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/keys"
)

// Bounds and defaults of the options. A value outside its bounds fails New
// (or NewStore) with ErrInvalid.
const (
	// DefaultMaxTTL is the longest freshness (and the longest grace) an
	// entry gets unless WithMaxTTL says otherwise (the AI platform's
	// maximum API cache TTL, 86400s).
	DefaultMaxTTL = 24 * time.Hour
	// MaxTTL bounds WithMaxTTL.
	MaxTTL = 30 * 24 * time.Hour
	// DefaultLease is how long a loading process holds an entry's lease
	// between heartbeats (it renews it every third of that while the
	// loader runs); when the process dies, another takes over after it.
	DefaultLease = 5 * time.Second
	// MinLease and MaxLease bound WithLease.
	MinLease = 30 * time.Millisecond
	MaxLease = 5 * time.Minute
	// DefaultLoadTimeout bounds one load (the loader and its write-back).
	DefaultLoadTimeout = 30 * time.Second
	// MaxLoadTimeout bounds WithLoadTimeout.
	MaxLoadTimeout = 10 * time.Minute
	// DefaultMaxValueSize is the largest encoded value stored unless
	// WithMaxValueSize says otherwise.
	DefaultMaxValueSize = 1 << 20
	// MaxValueSize bounds WithMaxValueSize.
	MaxValueSize = 64 << 20
	// DefaultBeta is XFetch's β: 1 refreshes a key about one recompute
	// time before it expires, on average, when it is read often.
	DefaultBeta = 1.0
	// MaxBeta bounds WithBeta.
	MaxBeta = 100.0
	// DefaultHitFlush is how often the counted hits are added to the
	// entries' metadata.
	DefaultHitFlush = time.Second
	// DefaultPipelines is the number of round trips a Store keeps in
	// flight before further calls wait and share a pipeline (see
	// WithPipelining).
	DefaultPipelines = 4
	// MaxPipelines bounds WithPipelining.
	MaxPipelines = 1024
	// MaxTags bounds the tags of one entry.
	MaxTags = 32
	// MaxLocalEntries bounds WithLocal's size.
	MaxLocalEntries = 10_000_000
	// DefaultLocalMaxAge is how long the local tier keeps a value without
	// news from Redis unless WithLocal says otherwise.
	DefaultLocalMaxAge = time.Second
)

// ErrorHook receives what a Store cannot return to a caller: an entry
// that does not decode (an error matching keys.ErrCorrupt that names the
// key; the entry is reloaded), a failed background refresh, a failed hit
// flush, a malformed event. key is the Redis key concerned, or "".
type ErrorHook func(ctx context.Context, key string, err error)

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
	hook         ErrorHook
	lanes        int
}

func defaults() options {
	return options{
		beta: DefaultBeta, lease: DefaultLease, loadTimeout: DefaultLoadTimeout,
		maxValue: DefaultMaxValueSize, maxTTL: DefaultMaxTTL, hitFlush: DefaultHitFlush,
		lanes: DefaultPipelines,
	}
}

// WithNamespace puts every key and the events channel under ns.
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithCodec sets how a Cache encodes its values (default codec.JSON). A
// Store stores bytes and ignores it.
func WithCodec(c codec.Codec) Option { return func(o *options) { o.codec = c } }

// WithPolicy sets a Cache's per-endpoint freshness (default: every
// endpoint DefaultTTL). SeedPolicy returns the AI platform's table. A
// Store ignores it.
func WithPolicy(p Policy) Option { return func(o *options) { o.policy = &p } }

// WithGrace keeps each entry for d after its freshness ends, during which
// it is served stale while one background refresh (one in all instances)
// replaces it: stale-while-revalidate. 0, the default, turns it off. A
// policy rule's Grace overrides it for its endpoints.
func WithGrace(d time.Duration) Option { return func(o *options) { o.grace = d } }

// WithStaleOnError serves a stale value still within its grace when the
// loader fails, instead of the loader's error (which goes to the error
// hook). It needs a grace window (WithGrace or a rule's Grace).
func WithStaleOnError() Option { return func(o *options) { o.staleOnError = true } }

// WithNegativeTTL caches "not found" (a loader returning ErrNotFound) for
// d, so that repeated lookups of a missing value do not reach the loader.
// 0, the default, caches nothing; other loader errors are never cached.
func WithNegativeTTL(d time.Duration) Option { return func(o *options) { o.negTTL = d } }

// WithBeta sets XFetch's β (default DefaultBeta; 0 turns early refresh
// off; at most MaxBeta). A read of a fresh entry refreshes it early, in
// the background, with probability exp(-remaining/(β·delta)), where delta
// is how long its last load took; larger β refreshes earlier.
func WithBeta(beta float64) Option { return func(o *options) { o.beta = beta } }

// WithLease sets how long a loading process holds an entry's lease without
// renewing it (default DefaultLease, within [MinLease, MaxLease]; rounded
// up to whole milliseconds). Other processes wait for its value meanwhile;
// if it dies, one of them takes over when the lease runs out.
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithLoadTimeout bounds one load: the loader's context ends after d
// (default DefaultLoadTimeout, at most MaxLoadTimeout), whatever the
// callers' contexts do.
func WithLoadTimeout(d time.Duration) Option { return func(o *options) { o.loadTimeout = d } }

// WithMaxValueSize sets the largest encoded value stored, in bytes
// (default DefaultMaxValueSize, at most MaxValueSize). Set fails with
// ErrInvalid beyond it; a loaded value beyond it is returned, not stored,
// and reported to the error hook.
func WithMaxValueSize(n int) Option { return func(o *options) { o.maxValue = n } }

// WithMaxTTL sets the longest freshness of an entry, and the longest
// grace (default DefaultMaxTTL, at most MaxTTL); policies, options and
// per-call TTLs beyond it fail with ErrInvalid. An entry lives at most
// twice that.
func WithMaxTTL(d time.Duration) Option { return func(o *options) { o.maxTTL = d } }

// WithHitFlush sets how often hits counted in memory are added to the
// entries' "hits" field, in one pipeline per flush (default
// DefaultHitFlush, within [10ms, 1h]).
func WithHitFlush(d time.Duration) Option { return func(o *options) { o.hitFlush = d } }

// WithoutHitCounts turns hit counting off: "hits" stays 0.
func WithoutHitCounts() Option { return func(o *options) { o.noHits = true } }

// WithLocal adds a bounded in-process tier of up to size entries (at most
// MaxLocalEntries), each kept at most maxAge (0 means
// DefaultLocalMaxAge; at most an hour) and never past its freshness in
// Redis. Set, Delete and InvalidateTag in any instance publish on the
// events channel and every local tier drops what they changed, so a local
// value is stale at most for the message's delivery, or maxAge when a
// message is lost (Redis pub/sub is at most once). On a redis.Ring the
// Store subscribes on every shard (a connection each). Off by default.
func WithLocal(size int, maxAge time.Duration) Option {
	return func(o *options) { o.localSize, o.localAge = size, maxAge }
}

// WithErrorHook sets the function that receives errors no caller can get
// (see ErrorHook). The default drops them.
func WithErrorHook(h ErrorHook) Option { return func(o *options) { o.hook = h } }

// WithPipelining sets how many round trips one Store keeps in flight
// before further calls wait and share a pipeline (default
// DefaultPipelines; 0 sends every call on its own; at most MaxPipelines),
// for hits (their plain reads) and for the scripts of loads and writes
// apart. Each call keeps its own replies; on a cluster the masters share
// the count, each of which may always have one in flight. Everything
// shared is harmless to send twice (reads, or scripts that recognise their
// own ID): a pipeline go-redis resends after a broken connection changes
// nothing.
func WithPipelining(n int) Option { return func(o *options) { o.lanes = n } }

// check validates the options for op.
func (o *options) check(op string) error {
	switch {
	case o.maxTTL < time.Millisecond || o.maxTTL > MaxTTL:
		return pkg.Invalidf(op, "max TTL %v outside [1ms, %v]", o.maxTTL, MaxTTL)
	case o.grace < 0 || o.grace > o.maxTTL:
		return pkg.Invalidf(op, "grace %v outside [0, max TTL %v]", o.grace, o.maxTTL)
	case o.negTTL < 0 || o.negTTL > o.maxTTL:
		return pkg.Invalidf(op, "negative TTL %v outside [0, %v]", o.negTTL, o.maxTTL)
	case !(o.beta >= 0 && o.beta <= MaxBeta):
		return pkg.Invalidf(op, "beta %v outside [0, %v]", o.beta, MaxBeta)
	case o.lease < MinLease || o.lease > MaxLease:
		return pkg.Invalidf(op, "lease %v outside [%v, %v]", o.lease, MinLease, MaxLease)
	case o.loadTimeout < time.Millisecond || o.loadTimeout > MaxLoadTimeout:
		return pkg.Invalidf(op, "load timeout %v outside [1ms, %v]", o.loadTimeout, MaxLoadTimeout)
	case o.maxValue < 1 || o.maxValue > MaxValueSize:
		return pkg.Invalidf(op, "max value size %d outside [1, %d]", o.maxValue, MaxValueSize)
	case o.hitFlush < 10*time.Millisecond || o.hitFlush > time.Hour:
		return pkg.Invalidf(op, "hit flush %v outside [10ms, 1h]", o.hitFlush)
	case o.lanes < 0 || o.lanes > MaxPipelines:
		return pkg.Invalidf(op, "pipelining %d outside [0, %d]", o.lanes, MaxPipelines)
	case o.localSize < 0 || o.localSize > MaxLocalEntries:
		return pkg.Invalidf(op, "local size %d outside [0, %d]", o.localSize, MaxLocalEntries)
	case o.localAge < 0 || o.localAge > time.Hour:
		return pkg.Invalidf(op, "local max age %v outside [0, 1h]", o.localAge)
	}
	if o.localAge == 0 {
		o.localAge = DefaultLocalMaxAge
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}
