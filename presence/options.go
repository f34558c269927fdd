package presence

import (
	"time"

	"github.com/redschema/redschema/keys"
)

// Option configures a Tracker, a Typing or an Availability. Options only
// record; the constructors check them all, so one list of options can
// build all three (each uses what concerns it).
type Option func(*options)

type options struct {
	ns       keys.Namespace
	profile  Profile
	maxMeta  int
	maxConns int
	noIndex  bool
	layout   Layout
	lanes    int
	availTag string
	occEvery time.Duration // 0: DefaultOccupancyInterval; < 0: off
}

// Limits on caller input, checked before anything is written.
const (
	// MaxConnIDLen is the longest connection ID accepted, in bytes.
	MaxConnIDLen = 256
	// MaxUsernameLen is the longest typing username accepted, in bytes.
	MaxUsernameLen = 256
	// DefaultMaxMetadata is the default limit on a connection's encoded
	// metadata JSON, in bytes (WithMaxMetadata).
	DefaultMaxMetadata = 1024
	// MaxMetadata is the highest limit WithMaxMetadata accepts.
	MaxMetadata = 8192
	// DefaultMaxConnections is the default limit on live connections per
	// user (WithMaxConnections).
	DefaultMaxConnections = 32
	// MaxConnections is the highest limit WithMaxConnections accepts: the
	// scripts read a user's whole connections on every operation.
	MaxConnections = 1024
	// MaxUsers is the most user IDs one GetMany or Online call takes.
	MaxUsers = 10000
	// DefaultPipelines is the number of round trips a Tracker, Typing or
	// Availability keeps in flight before further calls wait and share a
	// pipeline (see WithPipelining).
	DefaultPipelines = 4
	// MaxPipelines is the highest number WithPipelining accepts.
	MaxPipelines = 256
	// DefaultOccupancyInterval is the default least time between two
	// occupancy events of one channel (WithOccupancyInterval).
	DefaultOccupancyInterval = time.Second
)

// WithNamespace puts every key (and the events channel) under ns.
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithProfile selects the lifetimes and the presence format; the default is
// DetailedProfile().
func WithProfile(p Profile) Option { return func(o *options) { o.profile = p } }

// WithMaxMetadata sets the largest accepted connection metadata, in bytes
// of encoded JSON: 0 means DefaultMaxMetadata; otherwise in [2,
// MaxMetadata].
func WithMaxMetadata(n int) Option { return func(o *options) { o.maxMeta = n } }

// WithMaxConnections sets the most live connections a user may have: 0
// means DefaultMaxConnections; otherwise in [1, MaxConnections]. It bounds
// the connections hash (or the presence value with LayoutSingleKey).
func WithMaxConnections(n int) Option { return func(o *options) { o.maxConns = n } }

// WithoutOnlineIndex stops maintaining the online index
// (presence:online:{slot}), saving its memory (one sorted-set member per
// visible online user) and a few commands per operation. OnlineNow,
// OnlineCount, Sweep and RunSweeper then return ErrNoIndex (silent offlines
// are not announced); Get, GetMany and Online still work.
func WithoutOnlineIndex() Option { return func(o *options) { o.noIndex = true } }

// WithLayout selects where connections are stored (default LayoutHash).
// LayoutSingleKey stores them inside the presence JSON: fewer bytes, still
// readable by readers of the presence key, not by readers of the
// connections hash. Every operation keeps its semantics and its one round
// trip.
func WithLayout(l Layout) Option { return func(o *options) { o.layout = l } }

// WithPipelining sets how many round trips one Tracker, Typing or
// Availability keeps in flight at once (auto-pipelining), in [0,
// MaxPipelines]; the default is DefaultPipelines. A call made while none
// is in flight is sent at once, on its own; calls made while some are in
// flight wait and go out together, as one pipeline, when a round trip
// comes back. Every call is still one atomic script with its own reply; n
// = 0 turns auto-pipelining off (every call its own round trip). On a
// Redis Cluster the n round trips are shared by the masters, each of which
// may always have one in flight. When a connection
// breaks mid-pipeline, go-redis resends the whole pipeline: every
// operation of this package reports its first outcome when run again (see
// "Idempotence under retry" in docs/presence.md).
func WithPipelining(n int) Option { return func(o *options) { o.lanes = n } }

// WithAvailabilityTag puts admin availability under one hash tag shared by
// a whole deployment: admin:{tag}:{admin_id}:presence instead of
// admin:{admin_id}:presence, so that a script whose keys all carry {tag}
// (a chat assignment, which also touches the deployment's conversation
// queues) can read any admin's availability on a Redis Cluster. The cost:
// every admin's availability lives in one slot, on one master. The tag
// must be a valid key segment (non-empty, at most keys.MaxSegmentLen bytes
// of UTF-8). Only Availability uses it.
func WithAvailabilityTag(tag string) Option { return func(o *options) { o.availTag = tag } }

// WithOccupancyInterval sets the least time between two occupancy events
// of one channel (Channels), in [1ms, 1h]; the default is
// DefaultOccupancyInterval. Only Channels uses it.
func WithOccupancyInterval(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			d = -2 // refused by build; -1 is WithoutOccupancy
		}
		o.occEvery = d
	}
}

// WithoutOccupancy turns a Channels' occupancy events off. Only Channels
// uses it.
func WithoutOccupancy() Option { return func(o *options) { o.occEvery = -1 } }

// defaults are the options of a constructor given none.
func defaults() options {
	return options{profile: DetailedProfile(), lanes: DefaultPipelines}
}

// check validates the options for every constructor (op names it), after
// putting the defaults in place of the limits left zero.
func (o *options) check(op string) error {
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	p, err := o.profile.validate(op)
	if err != nil {
		return err
	}
	o.profile = p
	if o.maxMeta == 0 {
		o.maxMeta = DefaultMaxMetadata
	}
	if o.maxConns == 0 {
		o.maxConns = DefaultMaxConnections
	}
	switch {
	case o.layout != LayoutHash && o.layout != LayoutSingleKey:
		return pkg.Invalidf(op, "unknown layout %d", int(o.layout))
	case o.maxMeta < 2 || o.maxMeta > MaxMetadata:
		return pkg.Invalidf(op, "metadata limit %d outside [2, %d]", o.maxMeta, MaxMetadata)
	case o.maxConns < 1 || o.maxConns > MaxConnections:
		return pkg.Invalidf(op, "connection limit %d outside [1, %d]", o.maxConns, MaxConnections)
	case o.occEvery < -1 || o.occEvery > time.Hour:
		return pkg.Invalidf(op, "occupancy interval %v outside [1ms, 1h]", o.occEvery)
	case o.lanes < 0 || o.lanes > MaxPipelines:
		return pkg.Invalidf(op, "pipelining %d outside [0, %d]", o.lanes, MaxPipelines)
	}
	if o.availTag != "" {
		if _, err := pkg.Key(op, availTaggedKey, o.ns, o.availTag, "x"); err != nil {
			return err
		}
	}
	return nil
}
