package metrics

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Defaults and bounds of the Recorder's options.
const (
	defaultInterval     = time.Second
	minInterval         = 10 * time.Millisecond
	maxInterval         = time.Minute
	defaultHeartbeatTTL = 10 * time.Second
	maxHeartbeatTTL     = time.Hour
	defaultMaxSeries    = 1000
	maxSeries           = 100000
)

// Option configures a Recorder (and the Rollups it makes) or a Reader.
// Options are checked by the constructor; options that do not concern it
// are ignored.
type Option func(*options)

type options struct {
	ns        keys.Namespace
	interval  time.Duration
	heartbeat time.Duration
	maxSeries int
	instance  string
	onError   func(error)
	rollup    bool
	manual    bool
	shared    bool
	clock     func() time.Time // the local clock (tests follow the harness's)

	// the Rollup's (Recorder.Rollup)
	lease   time.Duration
	retain  [nTiers]time.Duration
	badTier bool // WithRetention named no tier
}

// WithNamespace puts every key under ns (its prefix, e.g. the
// home-automation backend's "ha:", and its hash-tag mode).
//
// Default: keys.Namespace{} (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithInterval sets how often the recorder flushes.
//
// Default: 1s. Range: 10ms to 1m.
func WithInterval(d time.Duration) Option { return func(o *options) { o.interval = d } }

// WithHeartbeatTTL sets how long a gauge contribution of this instance
// counts after its last flush: an instance that dies without Close stops
// counting within this time.
//
// Default: 10s. Range: twice the interval to 1h.
func WithHeartbeatTTL(d time.Duration) Option { return func(o *options) { o.heartbeat = d } }

// WithMaxSeries caps the distinct label-value combinations (series) each
// metric holds in this recorder, endpoints of the HTTP metrics included.
// Values beyond the cap are recorded in the metric's overflow series,
// whose label values are all Overflow. A Reader WithSharedKeys shows at
// most this many endpoints and sums the rest into the Overflow one.
//
// Default: 1000. Range: 1 to 100000.
func WithMaxSeries(n int) Option { return func(o *options) { o.maxSeries = n } }

// WithInstance sets a label (a host or pod name) that starts the
// recorder's instance ID, followed by a random suffix; at most 64 bytes of
// UTF-8 without ':', '|' or control bytes.
//
// Default: none (the instance ID is the random suffix alone).
func WithInstance(label string) Option { return func(o *options) { o.instance = label } }

// WithErrorHandler receives the errors of background flushes (which are
// retried: nothing is lost) and the keys.ErrCorrupt errors of keys holding
// data this package did not write (whose deltas are dropped). It is called
// from the flusher goroutine and must not block. By default errors are
// only counted in Stats.
//
// Default: none.
func WithErrorHandler(f func(error)) Option { return func(o *options) { o.onError = f } }

// WithRollup makes the recorder also write the rollup input of its
// counters and histograms (metrics:rollup:{name}:pending), which a Rollup
// drains into a sink. Without it a Rollup finds nothing to drain.
//
// Default: off.
func WithRollup() Option { return func(o *options) { o.rollup = true } }

// WithoutFlusher starts no background flusher: the caller flushes with
// Flush (tests, batch jobs). Close still flushes.
//
// Default: off (a background flusher runs).
func WithoutFlusher() Option { return func(o *options) { o.manual = true } }

// WithSharedKeys shares the home-automation layout's keys with the
// backend's own Node service writing them at the same time (a migration).
// It changes two things. The Recorder moves connections:http:current by
// INCRBY/DECRBY of what its in-flight count changed by since its last
// flush, instead of rewriting it with the Go instances' sum, so both
// sides' counts add up; an instance found dead (no flush within its
// heartbeat TTL) has its count taken back by the next flush of a live one;
// and max_since_startup is raised to the shared count. The Reader reads
// Connections from connections:http:current (both sides, and what a
// killed Node instance never decremented) and the endpoints from every
// requests:endpoint:* and errors:endpoint:* key, found by SCAN (cost:
// the whole keyspace per Read; at most 100000 keys, then an error), so
// that their sum agrees with requests:total whoever wrote them; past
// WithMaxSeries endpoints the rest are summed into the Overflow row.
// Counters were always added with INCRBY, and endpoints stay by route
// template. Every Go instance sharing the keys must use it. See
// docs/metrics.md, "Shared keys".
//
// Default: off.
func WithSharedKeys() Option { return func(o *options) { o.shared = true } }

// WithRetention keeps a rollup tier's closed buckets in Redis for d (at
// least two buckets' length: 2m for Minute, 2h for Hour, 48h for Day);
// buckets the sink has not taken are kept longer, up to twice the
// retention's number of buckets. It concerns the recorder's Rollups.
//
// Default: 8h (Minute), 168h (Hour), 2160h (Day). Range: 2 buckets to 9600h.
func WithRetention(t Tier, d time.Duration) Option {
	return func(o *options) {
		if t >= 0 && t < nTiers {
			o.retain[t] = d
		} else {
			o.badTier = true
		}
	}
}

// WithLease sets how long a rollup instance holds a metric's lease after
// each drain (rounded up to whole milliseconds); a RunOnce must finish
// within it or lose the lease to another instance. It concerns the
// recorder's Rollups.
//
// Default: 30s. Range: 1s to 1h.
func WithLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// withClock makes the recorder read its local clock from now (tests: the
// harness's clock, which Advance moves with miniredis's TIME).
func withClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// newOptions is the constructors' preamble (op names the constructor):
// the options over the defaults, checked with the client
// (call.Configure), then the client's kind against them.
func newOptions(op string, rdb redis.UniversalClient, opts []Option) (options, error) {
	o, err := call.Configure(pkg, op, rdb, defaults(), opts, (*options).check)
	if err != nil {
		return o, err
	}
	switch rdb.(type) {
	case *redis.Ring:
		return o, pkg.Invalidf(op, "a Ring client cannot run a flush script over keys of several shards")
	case *redis.ClusterClient:
		if o.ns.NoHashTags {
			return o, pkg.Invalidf(op, "a namespace without hash tags cannot be used on a cluster")
		}
	}
	return o, nil
}

// defaults are the options of a Recorder built without any.
func defaults() options {
	return options{interval: defaultInterval, heartbeat: defaultHeartbeatTTL, maxSeries: defaultMaxSeries, clock: time.Now,
		lease: defaultLease, retain: [nTiers]time.Duration{defaultMinuteRetention, defaultHourRetention, defaultDayRetention}}
}

// check validates the options for every constructor.
func (o *options) check(op string) error {
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	switch {
	case o.interval < minInterval || o.interval > maxInterval:
		return pkg.Invalidf(op, "interval %v outside [%v, %v]", o.interval, minInterval, maxInterval)
	case o.heartbeat < 2*o.interval || o.heartbeat > maxHeartbeatTTL:
		return pkg.Invalidf(op, "heartbeat TTL %v outside [2 x interval %v, %v]", o.heartbeat, o.interval, maxHeartbeatTTL)
	case o.maxSeries < 1 || o.maxSeries > maxSeries:
		return pkg.Invalidf(op, "max series %d outside [1, %d]", o.maxSeries, maxSeries)
	case len(o.instance) > 64 || !utf8.ValidString(o.instance) ||
		strings.ContainsFunc(o.instance, func(r rune) bool { return r == ':' || r == '|' || r < 0x20 || r == 0x7f }):
		return pkg.Invalidf(op, "instance label %q", o.instance)
	case o.lease < time.Second || o.lease > time.Hour:
		return pkg.Invalidf(op, "lease %v outside [1s, 1h]", o.lease)
	case o.badTier:
		return pkg.Invalidf(op, "WithRetention of an unknown tier")
	}
	for t, d := range o.retain {
		if d < 2*Tier(t).Duration() || d > maxRetention {
			return pkg.Invalidf(op, "%s retention %v outside [%v, %v]", Tier(t), d, 2*Tier(t).Duration(), maxRetention)
		}
	}
	return nil
}
