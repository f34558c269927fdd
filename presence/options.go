package presence

import (
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Option configures a Tracker (with its Typing and Availability), a
// Channels or an Inspector. Options only record; the constructors check
// them all, so one list of options can build each of them (each uses what
// concerns it).
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
	others   bool
	occEvery time.Duration // 0: defaultOccupancyInterval; -1: off; < -1: refused
}

// Limits on caller input, checked before anything is written.
const (
	// maxConnIDLen is the longest connection ID accepted, in bytes.
	maxConnIDLen = 256
	// maxUsernameLen is the longest typing username accepted, in bytes.
	maxUsernameLen = 256
	// defaultMetadata is the default limit on a connection's encoded
	// metadata JSON, in bytes (WithMaxMetadata).
	defaultMetadata = 1024
	// maxMetadata is the highest limit WithMaxMetadata accepts.
	maxMetadata = 8192
	// defaultConnections is the default limit on live connections per
	// user (WithMaxConnections).
	defaultConnections = 32
	// maxConnections is the highest limit WithMaxConnections accepts: the
	// scripts read a user's whole connections on every operation.
	maxConnections = 1024
	// maxUsers is the most user IDs one GetMany or Online call takes.
	maxUsers = 10000
	// defaultOccupancyInterval is the default least time between two
	// occupancy events of one channel (WithOccupancyInterval).
	defaultOccupancyInterval = time.Second
	// maxOccupancyInterval is the longest interval WithOccupancyInterval
	// accepts.
	maxOccupancyInterval = time.Hour
)

// WithNamespace puts every key (and the events channel) under ns.
//
// Default: the empty namespace (no prefix).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithProfile selects the lifetimes and the presence format (see Profile
// for the range of each duration).
//
// Default: DetailedProfile().
func WithProfile(p Profile) Option { return func(o *options) { o.profile = p } }

// WithMaxMetadata sets the largest accepted connection metadata, in bytes
// of encoded JSON (also the largest channel member data); 0 means the
// default.
//
// Default: 1024. Range: 2 to 8192.
func WithMaxMetadata(n int) Option { return func(o *options) { o.maxMeta = n } }

// WithMaxConnections sets the most live connections a user may have (and
// devices a user may have in a channel); 0 means the default. It bounds
// the connections hash (or the presence value with LayoutSingleKey): the
// scripts read a user's whole connections on every operation.
//
// Default: 32. Range: 1 to 1024.
func WithMaxConnections(n int) Option { return func(o *options) { o.maxConns = n } }

// WithoutOnlineIndex stops maintaining the online index
// (presence:online:{slot}), saving its memory (one sorted-set member per
// visible online user) and a few commands per operation. OnlineNow,
// OnlineCount, Sweep and RunSweeper then return ErrNoIndex (silent offlines
// are not announced); Get, GetMany and Online still work.
//
// Default: off.
func WithoutOnlineIndex() Option { return func(o *options) { o.noIndex = true } }

// WithLayout selects where connections are stored. LayoutSingleKey stores
// them inside the presence JSON: fewer bytes, still readable by readers of
// the presence key, not by readers of the connections hash. Every
// operation keeps its semantics and its one round trip.
//
// Default: LayoutHash.
func WithLayout(l Layout) Option { return func(o *options) { o.layout = l } }

// WithPipelining sets how many round trips one Tracker (its Typing and its
// Availability each have their own) or one Channels keeps in flight at
// once (auto-pipelining). A call made while none is in flight is sent at
// once, on its own; calls made while some are in flight wait and go out
// together, as one pipeline, when a round trip comes back. Every call is
// still one atomic script with its own reply; n = 0 turns auto-pipelining
// off (every call its own round trip). On a Redis Cluster the n round
// trips are shared by the masters, each of which may always have one in
// flight. When a connection breaks mid-pipeline, go-redis resends the
// whole pipeline: every operation of this package reports its first
// outcome when run again (see "Idempotence under retry" in
// docs/presence.md).
//
// Default: 4. Range: 0 to 1024.
func WithPipelining(n int) Option { return func(o *options) { o.lanes = n } }

// WithAvailabilityTag puts admin availability under one hash tag shared by
// a whole deployment: admin:{tag}:{admin_id}:presence instead of
// admin:{admin_id}:presence, so that a script whose keys all carry {tag}
// (a chat assignment, which also touches the deployment's conversation
// queues) can read any admin's availability on a Redis Cluster. The cost:
// every admin's availability lives in one slot, on one master. The tag
// must be a valid key segment (non-empty, at most 1,024 bytes
// of UTF-8). Only Tracker.Availability uses it.
//
// Default: off.
func WithAvailabilityTag(tag string) Option { return func(o *options) { o.availTag = tag } }

// WithOtherWriters shares Availability's and Typing's keys with another
// writer of the same layout, the reference systems' own services (the
// home-automation backend's, the chat app's), during a migration:
// Availability.Get reads an availability key without a TTL (what the
// backend's set(key, word, 'EX', 1800) leaves through node-redis, which
// drops the positional EX) as that writer's word instead of corrupt, and
// the next Set gives it the TTL; Typing keeps its throttle markers and
// request memos outside typing: (typers:throttle:..., typers:requests:...),
// so that typing:{conversation_id}:* holds the indicators alone, and Typers
// lists the indicators in those keys, whoever set them, instead of the
// index (SCAN, then MGET: see Typers for the cost). On a Redis Cluster it
// needs hash tags (a namespace without them is refused). See "Other
// writers" in docs/presence.md.
//
// Default: off.
func WithOtherWriters() Option { return func(o *options) { o.others = true } }

// WithOccupancyInterval sets the least time between two occupancy events
// of one channel (Channels); 0 turns occupancy events off. Only Channels
// uses it.
//
// Default: 1s. Range: 1ms to 1h.
func WithOccupancyInterval(d time.Duration) Option {
	switch {
	case d == 0:
		d = -1 // off
	case d < 0:
		d = -2 // refused by check
	}
	return func(o *options) { o.occEvery = d }
}

// defaults are the options of a constructor given none.
func defaults() options {
	return options{profile: DetailedProfile(), lanes: call.DefaultLanes}
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
		o.maxMeta = defaultMetadata
	}
	if o.maxConns == 0 {
		o.maxConns = defaultConnections
	}
	switch {
	case o.layout != LayoutHash && o.layout != LayoutSingleKey:
		return pkg.Invalidf(op, "unknown layout %d", int(o.layout))
	case o.maxMeta < 2 || o.maxMeta > maxMetadata:
		return pkg.Invalidf(op, "metadata limit %d outside [2, %d]", o.maxMeta, maxMetadata)
	case o.maxConns < 1 || o.maxConns > maxConnections:
		return pkg.Invalidf(op, "connection limit %d outside [1, %d]", o.maxConns, maxConnections)
	case o.occEvery < -1 || o.occEvery > maxOccupancyInterval:
		return pkg.Invalidf(op, "occupancy interval %v outside [1ms, 1h]", o.occEvery)
	}
	if err := pkg.CheckLanes(op, o.lanes); err != nil {
		return err
	}
	if o.availTag != "" {
		if _, err := pkg.Key(op, availTaggedKey, o.ns, o.availTag, "x"); err != nil {
			return err
		}
	}
	return nil
}
