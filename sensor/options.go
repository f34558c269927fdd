package sensor

import (
	"cmp"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Bounds of the options; New refuses values beyond them with ErrInvalid.
const (
	minRetention       = time.Minute
	maxRetention       = 30 * 24 * time.Hour
	maxListCap         = 100000
	minRollupRetention = time.Hour
	maxRollupRetention = 400 * 24 * time.Hour
	maxFuture          = 24 * time.Hour
)

// defaultListCap is the length of a generic sensor's list unless
// WithListCap says otherwise (the sensor collector's
// MAX_SENSOR_HISTORY).
const defaultListCap = 1000

// defaultMaxFuture is how far ahead of the clocks a reading's timestamp
// may be unless WithMaxFuture says otherwise.
const defaultMaxFuture = 5 * time.Minute

// Option configures a Client. Options only record; New checks them.
type Option func(*options)

type options struct {
	ns           keys.Namespace
	retention    time.Duration
	listCap      int
	minute, hour time.Duration // rollup retention; 0 with noRollups
	noRollups    bool
	dup          DuplicatePolicy
	maxFuture    time.Duration
	types, locs  []string
	compact      bool
	noIDs        bool
}

// WithNamespace puts every key under ns (a prefix, and the hash-tag
// mode; keys.Namespace{NoHashTags: true} gives the sensor collector's
// exact keys).
//
// Default: keys.Namespace{} (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithRetention sets how long raw readings are kept (0: the default).
// It is also the TTL every write sets on the raw keys, the meta hashes
// and the discovery index.
//
// Default: 24h. Range: 1m to 720h.
func WithRetention(d time.Duration) Option { return func(o *options) { o.retention = d } }

// WithListCap sets the length of a generic sensor's list (0: the
// default; the sensor collector's MAX_SENSOR_HISTORY). The compact
// encoding has no lists: there, as in the sorted sets, the retention
// alone bounds a sensor's readings.
//
// Default: 1000. Range: 1 to 100000.
func WithListCap(n int) Option { return func(o *options) { o.listCap = n } }

// WithRollups sets the retention of the minute and the hour rollup tiers
// (0 means the tier's default). WithoutRollups turns them off.
//
// Default: 168h (minute), 2160h (hour). Range: 1h to 9600h.
func WithRollups(minute, hour time.Duration) Option {
	return func(o *options) { o.minute, o.hour, o.noRollups = minute, hour, false }
}

// WithoutRollups turns the rollup tiers off: writes maintain no
// aggregates, and Aggregate always reads raw readings.
//
// Default: off (the tiers are on).
func WithoutRollups() Option { return func(o *options) { o.noRollups = true } }

// WithDuplicates sets what a write does when a reading of the same
// sensor with the same timestamp is already stored.
//
// Default: KeepBoth.
func WithDuplicates(p DuplicatePolicy) Option { return func(o *options) { o.dup = p } }

// WithMaxFuture sets how far ahead of the clocks a reading's timestamp
// may be (0: the default). A reading further ahead is ErrInvalid: Ingest
// checks it against the local clock before sending, and the write script
// against the server's.
//
// Default: 5m. Range: 1ns to 24h.
func WithMaxFuture(d time.Duration) Option { return func(o *options) { o.maxFuture = d } }

// WithTypes restricts the sensor types the client accepts to names (and
// the built-in Motion, Temperature and Illuminance): any other type is
// ErrInvalid. By default every well-formed type is accepted.
//
// Default: every type.
func WithTypes(names ...string) Option {
	return func(o *options) { o.types = append(o.types, names...) }
}

// WithLocations restricts the locations the client accepts to names: any
// other location is ErrInvalid. By default every well-formed location is
// accepted.
//
// Default: every location.
func WithLocations(names ...string) Option {
	return func(o *options) { o.locs = append(o.locs, names...) }
}

// WithCompactEncoding stores raw readings in a compact form instead of
// the sensor collector's JSON (see Compact encoding in docs/sensor.md): a
// small fraction of the memory, but not readable by that system's readers,
// and keeping only each reading's time, value (motion: state), ID, unit
// and entity ID. The meta hashes, the discovery index and the rollups are the
// same in both encodings. A client reads only the encoding it writes.
//
// Default: off (the sensor collector's JSON).
func WithCompactEncoding() Option { return func(o *options) { o.compact = true } }

// WithoutReadingIDs writes the sensor collector's exact members: no
// "id" field, so that with keys.Namespace{NoHashTags: true} every byte
// the client writes is the collector's (docs/sensor.md, Sharing keys
// with the collector). A resend is then recognised by its bytes: a
// member identical to the one a write would add (same timestamp,
// collected_at and payload) is taken as that write sent again, reported
// Stored and not counted twice, so two readings that are identical in
// every stored field are one member, as with the collector. Result.ID
// is empty, a Reading's ID is checked but not stored, and a retry you
// make yourself must resend the same reading with the same CollectedAt
// (set it before the first Ingest). Not with WithCompactEncoding.
//
// Default: off (every member carries the reading's ID).
func WithoutReadingIDs() Option { return func(o *options) { o.noIDs = true } }

// New returns a Client over rdb. It fails with ErrInvalid on a bad
// option, a nil client, or a go-redis client without
// ContextTimeoutEnabled; it does not contact Redis.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	return build("new", rdb, opts)
}

// build is New, failing under op (New and NewInspector). The options'
// zero values are their defaults, which check fills in.
func build(op string, rdb redis.UniversalClient, opts []Option) (*Client, error) {
	o, err := call.Configure(pkg, op, rdb, options{}, opts, (*options).check)
	if err != nil {
		return nil, err
	}
	locs, err := pkg.Key(op, locationsKey, o.ns)
	if err != nil {
		return nil, err
	}
	c := &Client{run: call.NewRunner(rdb, 0), opt: o, now: time.Now, locations: locs}
	if len(o.types) > 0 {
		c.types = map[string]bool{Motion: true, Temperature: true, Illuminance: true}
		for _, t := range o.types {
			c.types[t] = true
		}
	}
	if len(o.locs) > 0 {
		c.locs = map[string]bool{}
		for _, l := range o.locs {
			c.locs[l] = true
		}
	}
	return c, nil
}

// check puts the defaults in place of the options left zero, then
// validates the options for New and NewInspector.
func (o *options) check(op string) error {
	// Zero means the default.
	o.retention = cmp.Or(o.retention, defaultRetention)
	o.listCap = cmp.Or(o.listCap, defaultListCap)
	o.minute = cmp.Or(o.minute, defaultMinuteRetention)
	o.hour = cmp.Or(o.hour, defaultHourRetention)
	o.maxFuture = cmp.Or(o.maxFuture, defaultMaxFuture)
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	switch {
	case o.retention < minRetention || o.retention > maxRetention:
		return pkg.Invalidf(op, "retention %v outside [%v, %v]", o.retention, minRetention, maxRetention)
	case o.listCap < 1 || o.listCap > maxListCap:
		return pkg.Invalidf(op, "list cap %d outside [1, %d]", o.listCap, maxListCap)
	case o.maxFuture <= 0 || o.maxFuture > maxFuture:
		return pkg.Invalidf(op, "max future %v outside (0, %v]", o.maxFuture, maxFuture)
	case o.dup != KeepBoth && o.dup != LastWins && o.dup != FirstWins:
		return pkg.Invalidf(op, "duplicate policy %d", o.dup)
	case o.noIDs && o.compact:
		return pkg.Invalidf(op, "WithoutReadingIDs writes the collector's JSON; WithCompactEncoding does not")
	}
	if o.noRollups {
		o.minute, o.hour = 0, 0
	} else {
		for _, d := range []time.Duration{o.minute, o.hour} {
			if d < minRollupRetention || d > maxRollupRetention {
				return pkg.Invalidf(op, "rollup retention %v outside [%v, %v]", d, minRollupRetention, maxRollupRetention)
			}
		}
	}
	for _, t := range o.types {
		if err := checkType(op, t, nil); err != nil {
			return err
		}
	}
	for _, l := range o.locs {
		if err := checkLocation(op, l, nil); err != nil {
			return err
		}
	}
	return nil
}
