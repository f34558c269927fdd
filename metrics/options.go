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
	DefaultInterval     = time.Second
	MinInterval         = 10 * time.Millisecond
	MaxInterval         = time.Minute
	DefaultHeartbeatTTL = 10 * time.Second
	MaxHeartbeatTTL     = time.Hour
	DefaultMaxSeries    = 1000
	MaxMaxSeries        = 100000
)

// Option configures a Recorder, a Reader or a Rollup. Options are checked
// by the constructor; options that do not concern it are ignored.
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
	clock     func() time.Time // the local clock (tests follow the harness's)
}

// WithNamespace puts every key under ns (its prefix, e.g. the
// home-automation backend's "ha:", and its hash-tag mode).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithInterval sets how often the recorder flushes (default 1s, within
// [MinInterval, MaxInterval]).
func WithInterval(d time.Duration) Option { return func(o *options) { o.interval = d } }

// WithHeartbeatTTL sets how long a gauge contribution of this instance
// counts after its last flush (default 10s; at least twice the interval,
// at most MaxHeartbeatTTL): an instance that dies without Close stops
// counting within this time.
func WithHeartbeatTTL(d time.Duration) Option { return func(o *options) { o.heartbeat = d } }

// WithMaxSeries caps the distinct label-value combinations (series) each
// metric holds in this recorder, endpoints of the HTTP metrics included
// (default 1000, at most MaxMaxSeries). Values beyond the cap are recorded
// in the metric's overflow series, whose label values are all Overflow.
func WithMaxSeries(n int) Option { return func(o *options) { o.maxSeries = n } }

// WithInstance sets a label (a host or pod name) that starts the
// recorder's instance ID, followed by a random suffix; at most 64 bytes of
// UTF-8 without ':', '|' or control bytes.
func WithInstance(label string) Option { return func(o *options) { o.instance = label } }

// WithErrorHandler receives the errors of background flushes (which are
// retried: nothing is lost) and the keys.ErrCorrupt errors of keys holding
// data this package did not write (whose deltas are dropped). It is called
// from the flusher goroutine and must not block. By default errors are
// only counted in Stats.
func WithErrorHandler(f func(error)) Option { return func(o *options) { o.onError = f } }

// WithRollup makes the recorder also write the rollup input of its
// counters and histograms (metrics:rollup:{name}:pending), which a Rollup
// drains into a sink. Without it a Rollup finds nothing to drain.
func WithRollup() Option { return func(o *options) { o.rollup = true } }

// WithoutFlusher starts no background flusher: the caller flushes with
// Flush (tests, batch jobs). Close still flushes.
func WithoutFlusher() Option { return func(o *options) { o.manual = true } }

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
	return options{interval: DefaultInterval, heartbeat: DefaultHeartbeatTTL, maxSeries: DefaultMaxSeries, clock: time.Now}
}

// check validates the options for every constructor.
func (o *options) check(op string) error {
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	switch {
	case o.interval < MinInterval || o.interval > MaxInterval:
		return pkg.Invalidf(op, "interval %v outside [%v, %v]", o.interval, MinInterval, MaxInterval)
	case o.heartbeat < 2*o.interval || o.heartbeat > MaxHeartbeatTTL:
		return pkg.Invalidf(op, "heartbeat TTL %v outside [2 x interval %v, %v]", o.heartbeat, o.interval, MaxHeartbeatTTL)
	case o.maxSeries < 1 || o.maxSeries > MaxMaxSeries:
		return pkg.Invalidf(op, "max series %d outside [1, %d]", o.maxSeries, MaxMaxSeries)
	case len(o.instance) > 64 || !utf8.ValidString(o.instance) ||
		strings.ContainsFunc(o.instance, func(r rune) bool { return r == ':' || r == '|' || r < 0x20 || r == 0x7f }):
		return pkg.Invalidf(op, "instance label %q", o.instance)
	}
	return nil
}
