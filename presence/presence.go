package presence

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// Sentinel errors. Errors returned by the package wrap one of these (or
// keys.ErrInvalidKey / keys.ErrCorrupt) and name the operation and key.
var (
	// ErrUnknownConnection is returned by Heartbeat for a connection that
	// is not registered: never connected, disconnected, or pruned after it
	// stopped heartbeating for the profile's TTL. The client must Connect
	// again; Heartbeat never re-registers (it has no metadata to do so).
	ErrUnknownConnection = errors.New("presence: unknown connection")
	// ErrOffline is returned by SetStatus and SetActivity for a user with no
	// live connection.
	ErrOffline = errors.New("presence: user is offline")
	// ErrTooManyConnections is returned by Connect when the user already has
	// the maximum number of live connections (WithMaxConnections).
	ErrTooManyConnections = errors.New("presence: too many connections")
	// ErrInvalidStatus is returned for a status the operation does not
	// accept.
	ErrInvalidStatus = errors.New("presence: invalid status")
	// ErrNoIndex is returned by OnlineNow, OnlineCount, Sweep and
	// RunSweeper on a tracker built WithoutOnlineIndex.
	ErrNoIndex = errors.New("presence: online index disabled")
	// ErrInvalidInput is returned for bad arguments (connection ID, oversized
	// metadata or username, bad options) before anything is written.
	ErrInvalidInput = errors.New("presence: invalid input")
)

// Status is a user's availability as stored in the presence JSON.
type Status string

// The statuses. Online, Away and Busy are shown to others as they are;
// Invisible is online for the system (Get, Online, notifications) and
// offline for others (Presence.Public, events, the online index).
const (
	Online    Status = "online"
	Away      Status = "away"
	Busy      Status = "busy"
	Invisible Status = "invisible"
	Offline   Status = "offline"
)

func (s Status) valid() bool {
	switch s {
	case Online, Away, Busy, Invisible, Offline:
		return true
	}
	return false
}

// Format selects the presence JSON a profile writes and reads.
type Format int

// The formats.
const (
	// Format002 is seed 002's presence JSON:
	// {"status","lastSeen","activeConnections","metadata":{"device","lastActivity"}}.
	Format002 Format = iota
	// Format004 is seed 004's presence JSON: {"userId","status","lastSeen"}.
	Format004
)

func (f Format) arg() string {
	if f == Format004 {
		return "004"
	}
	return "002"
}

// Layout selects where a tracker stores a user's connections.
type Layout int

// The layouts. All trackers writing one namespace must use the same one:
// a tracker of the other layout does not see the connections and turns
// their users offline.
const (
	// LayoutHash (the default) is seed 002's: the presence JSON in
	// presence:{user_id} and one field per connection in the hash
	// connections:{user_id}, both byte-compatible with the seed.
	LayoutHash Layout = iota
	// LayoutSingleKey keeps only presence:{user_id}: the presence JSON of
	// the profile's Format with one more member, last, "connections":
	// {connection ID: [connectedAt, lastSeen, metadata], ...}. Readers of
	// the presence key (GET, JSON.parse(v).status, activeConnections) keep
	// working; HGETALL connections:{user_id} finds nothing. It takes about
	// 40% fewer bytes per user with two connections than seed 002's layout
	// (bench/RESULTS.md) because it saves a key and the hash's
	// per-field overhead, at the cost of a larger value that every GET
	// (Get, GetMany, Online) transfers. See the package doc, "Layouts".
	LayoutSingleKey
)

func (l Layout) arg() string {
	if l == LayoutSingleKey {
		return "single"
	}
	return "hash"
}

// String returns "hash" or "single-key".
func (l Layout) String() string {
	switch l {
	case LayoutHash:
		return "hash"
	case LayoutSingleKey:
		return "single-key"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Profile holds the lifetimes of one seed's presence layout.
type Profile struct {
	// Format is the presence JSON written and read.
	Format Format
	// TTL is how long a user stays online after the freshest heartbeat of
	// any of their connections, and how long a connection lives after its
	// own last heartbeat (a connection whose lastSeen is TTL old is stale
	// and pruned). The presence key and the connections hash expire then.
	TTL time.Duration
	// Heartbeat is the interval at which clients should call Heartbeat. It
	// is advice for callers (the examples use it); it must be below TTL.
	Heartbeat time.Duration
	// Retention is how long the presence key of a user who went offline
	// keeps "lastSeen" before it expires. Zero deletes it at once (seed 004).
	Retention time.Duration
	// TypingTTL is the lifetime of a typing indicator.
	TypingTTL time.Duration
	// TypingThrottle is the minimum interval between two accepted
	// StartTyping writes of one user in one conversation. Zero disables it.
	TypingThrottle time.Duration
}

// Seed002 is seed 002's presence service: 60 s presence and connection TTL,
// heartbeat every 30 s, offline "last seen" kept 600 s. Typing as seed 004.
var Seed002 = Profile{Format: Format002, TTL: 60 * time.Second, Heartbeat: 30 * time.Second, Retention: 600 * time.Second, TypingTTL: 3 * time.Second, TypingThrottle: 2 * time.Second}

// Seed004 is seed 004's chat presence: {userId,status,lastSeen} JSON for
// 300 s, deleted on going offline; typing 3 s, throttled to one per 2 s.
// The heartbeat interval (100 s, a third of the TTL) is ours: the seed does
// not name one.
var Seed004 = Profile{Format: Format004, TTL: 300 * time.Second, Heartbeat: 100 * time.Second, TypingTTL: 3 * time.Second, TypingThrottle: 2 * time.Second}

func (p Profile) validate() error {
	switch {
	case p.Format != Format002 && p.Format != Format004:
		return fmt.Errorf("%w: unknown format %d", ErrInvalidInput, p.Format)
	case p.TTL < time.Millisecond:
		return fmt.Errorf("%w: profile TTL %v must be at least 1ms", ErrInvalidInput, p.TTL)
	case p.Heartbeat <= 0 || p.Heartbeat >= p.TTL:
		return fmt.Errorf("%w: heartbeat %v must be positive and below the TTL %v", ErrInvalidInput, p.Heartbeat, p.TTL)
	case p.Retention < 0 || (p.Retention > 0 && p.Retention < time.Millisecond):
		// the scripts take milliseconds: 0 < Retention < 1ms would silently
		// mean "delete at once"
		return fmt.Errorf("%w: retention %v must be zero or at least 1ms", ErrInvalidInput, p.Retention)
	case p.TypingTTL < time.Millisecond:
		return fmt.Errorf("%w: typing TTL %v must be at least 1ms", ErrInvalidInput, p.TypingTTL)
	case p.TypingThrottle < 0 || (p.TypingThrottle > 0 && p.TypingThrottle < time.Millisecond):
		return fmt.Errorf("%w: typing throttle %v must be zero or at least 1ms", ErrInvalidInput, p.TypingThrottle)
	}
	return nil
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
	// DefaultMaxConnections is the default limit on live connections per
	// user (WithMaxConnections).
	DefaultMaxConnections = 32
	// MaxConnections is the highest limit WithMaxConnections accepts: the
	// scripts read a user's whole connections hash on every operation.
	MaxConnections = 1024
)

// Option configures a Tracker.
type Option func(*config)

type config struct {
	ns       keys.Namespace
	profile  Profile
	maxMeta  int
	maxConns int
	channel  string
	noIndex  bool
	layout   Layout
}

// WithNamespace puts every key (and the events channel) under ns.
func WithNamespace(ns keys.Namespace) Option { return func(c *config) { c.ns = ns } }

// WithProfile selects the lifetimes and presence format; the default is
// Seed002.
func WithProfile(p Profile) Option { return func(c *config) { c.profile = p } }

// WithMaxMetadata sets the largest accepted connection metadata, in bytes
// of encoded JSON (default DefaultMaxMetadata).
func WithMaxMetadata(n int) Option { return func(c *config) { c.maxMeta = n } }

// WithMaxConnections sets the most live connections a user may have
// (default DefaultMaxConnections, at most MaxConnections). It bounds the
// connections hash.
func WithMaxConnections(n int) Option { return func(c *config) { c.maxConns = n } }

// WithoutOnlineIndex stops maintaining the online index
// (presence:online:{slot}), saving its memory (one sorted-set member per
// visible online user) and a few commands per operation. OnlineNow,
// OnlineCount, Sweep and RunSweeper then return ErrNoIndex (silent offlines
// are not announced); Get, GetMany and Online still work.
func WithoutOnlineIndex() Option { return func(c *config) { c.noIndex = true } }

// WithLayout selects where connections are stored (default LayoutHash, seed
// 002's). LayoutSingleKey stores them inside the presence JSON: fewer bytes,
// still readable by seed 002's presence readers, not by its connection
// readers. Every operation keeps its semantics and its one round trip.
func WithLayout(l Layout) Option { return func(c *config) { c.layout = l } }

// Tracker records users' connections and presence. It is safe for
// concurrent use; create one per process and share it.
type Tracker struct {
	c   redis.UniversalClient
	cfg config
}

// DefaultChannel is the pub/sub channel events are published on, after the
// namespace prefix: with prefix "ha:" the channel is "ha:presence:events".
const DefaultChannel = "presence:events"

// New returns a Tracker over client. It validates the namespace, profile and
// limits; it does not contact Redis.
func New(client redis.UniversalClient, opts ...Option) (*Tracker, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidInput)
	}
	cfg := config{profile: Seed002, maxMeta: DefaultMaxMetadata, maxConns: DefaultMaxConnections}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.ns.Validate(); err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	if err := cfg.profile.validate(); err != nil {
		return nil, err
	}
	if cfg.layout != LayoutHash && cfg.layout != LayoutSingleKey {
		return nil, fmt.Errorf("%w: unknown layout %d", ErrInvalidInput, cfg.layout)
	}
	if cfg.maxMeta < 2 {
		return nil, fmt.Errorf("%w: metadata limit %d", ErrInvalidInput, cfg.maxMeta)
	}
	if cfg.maxConns < 1 || cfg.maxConns > MaxConnections {
		return nil, fmt.Errorf("%w: connection limit %d not in [1, %d]", ErrInvalidInput, cfg.maxConns, MaxConnections)
	}
	cfg.channel = cfg.ns.Prefix + DefaultChannel
	return &Tracker{c: client, cfg: cfg}, nil
}

// Profile returns the tracker's profile.
func (t *Tracker) Profile() Profile { return t.cfg.profile }

// Layout returns the tracker's layout.
func (t *Tracker) Layout() Layout { return t.cfg.layout }

// Channel returns the pub/sub channel the tracker publishes events on.
func (t *Tracker) Channel() string { return t.cfg.channel }

func ms(d time.Duration) int64 { return d.Milliseconds() }

func fromMs(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
