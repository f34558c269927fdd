package chat

import (
	"time"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// Option configures a Chat. Options only record; New checks them all.
type Option func(*options)

type options struct {
	ns       keys.Namespace
	tag      string
	strategy Strategy
	capacity int
	convTTL  time.Duration
	dashTTL  time.Duration
	cache    int
	presence []presence.Option
}

// Strategy chooses which admin the backlog's next conversation goes to.
type Strategy int

const (
	// LeastLoaded gives it to the online admin under capacity with the
	// fewest assigned conversations; among equals, to the first after the
	// admin of the previous assignment in roster order (so ties rotate).
	LeastLoaded Strategy = iota
	// RoundRobin gives it to the first online admin under capacity after
	// the admin of the previous assignment, in roster order (admin IDs
	// sorted).
	RoundRobin
)

// Defaults and limits.
const (
	// DefaultTag is the deployment hash tag unless WithTag says otherwise.
	DefaultTag = "main"
	// DefaultCapacity is an admin's capacity unless AddAdmin or
	// WithCapacity says otherwise (the home-automation backend assigns
	// while SCARD < 10).
	DefaultCapacity = 10
	// MaxCapacity bounds an admin's capacity.
	MaxCapacity = 1000
	// MaxAdmins bounds a deployment's roster: every routing script reads
	// each admin's availability and load.
	MaxAdmins = 100
	// DefaultConversationTTL is how long a conversation stays open without
	// activity (the home-automation backend's 1 h on every chat key).
	DefaultConversationTTL = time.Hour
	// MinConversationTTL and MaxConversationTTL bound WithConversationTTL.
	MinConversationTTL = time.Second
	MaxConversationTTL = 7 * 24 * time.Hour
	// DefaultDashboardTTL is how long a computed dashboard is served
	// (the home-automation backend's 5 min).
	DefaultDashboardTTL = 5 * time.Minute
	// MaxDashboardTTL bounds WithDashboardTTL.
	MaxDashboardTTL = time.Hour
	// DefaultMessageCache is how many messages a conversation's cache
	// keeps (the home-automation backend's LTRIM 0 99).
	DefaultMessageCache = 100
	// MaxMessageCache bounds WithMessageCache.
	MaxMessageCache = 1000
	// MaxContentLen is the longest message content accepted, in bytes.
	MaxContentLen = 16 << 10
	// MaxIDLen is the longest conversation, admin or sender ID accepted,
	// in bytes.
	MaxIDLen = 256
	// MaxPage is the most entries one listing returns.
	MaxPage = 1000
	// ReplayWindow is how long a conversation remembers a request and its
	// first outcome, for go-redis's resends: a resend that reaches the
	// server within it is answered with that outcome and changes nothing,
	// however many other requests ran on the conversation meanwhile. It
	// is longer than go-redis's whole default retry schedule (at worst
	// about 2 minutes from the first run to the last resend; see
	// docs/chat.md) and than any call whose context deadline is shorter.
	ReplayWindow = 3 * time.Minute
)

// WithNamespace puts every key and channel under ns (and the presence
// objects of Availability and Typing too).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithTag sets the deployment hash tag (default DefaultTag): every key of
// the deployment carries {tag}, admin availability included, so that each
// script stays in one cluster slot. Run one Chat per tag to spread
// independent deployments (inboxes, tenants) over a cluster. The tag must
// be a valid key segment of at most MaxIDLen bytes.
func WithTag(tag string) Option { return func(o *options) { o.tag = tag } }

// WithStrategy sets how the backlog is handed out (default LeastLoaded).
func WithStrategy(s Strategy) Option { return func(o *options) { o.strategy = s } }

// WithCapacity sets the capacity AddAdmin gives when it is passed 0
// (default DefaultCapacity), in [1, MaxCapacity].
func WithCapacity(n int) Option { return func(o *options) { o.capacity = n } }

// WithConversationTTL sets how long a conversation stays open without
// activity (default DefaultConversationTTL), in [MinConversationTTL,
// MaxConversationTTL]. Every Chat of a deployment must use the same.
func WithConversationTTL(d time.Duration) Option { return func(o *options) { o.convTTL = d } }

// WithDashboardTTL sets how long a computed dashboard is served (default
// DefaultDashboardTTL), in [1ms, MaxDashboardTTL].
func WithDashboardTTL(d time.Duration) Option { return func(o *options) { o.dashTTL = d } }

// WithMessageCache sets how many messages a conversation's cache keeps
// (default DefaultMessageCache), in [1, MaxMessageCache].
func WithMessageCache(n int) Option { return func(o *options) { o.cache = n } }

// WithPresence passes options to the presence objects Availability and
// Typing return (a typing profile, pipelining). Their namespace and
// availability tag are always the Chat's.
func WithPresence(opts ...presence.Option) Option {
	return func(o *options) { o.presence = append(o.presence, opts...) }
}

// defaults are the options of a Chat built without any.
func defaults() options {
	return options{tag: DefaultTag, capacity: DefaultCapacity, convTTL: DefaultConversationTTL,
		dashTTL: DefaultDashboardTTL, cache: DefaultMessageCache}
}

// check validates the options for New and NewInspector.
func (o *options) check(op string) error {
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	switch {
	case o.tag == "" || len(o.tag) > MaxIDLen:
		return pkg.Invalidf(op, "tag %.64q: want 1 to %d bytes", o.tag, MaxIDLen)
	case o.strategy != LeastLoaded && o.strategy != RoundRobin:
		return pkg.Invalidf(op, "unknown strategy %d", int(o.strategy))
	case o.capacity < 1 || o.capacity > MaxCapacity:
		return pkg.Invalidf(op, "capacity %d outside [1, %d]", o.capacity, MaxCapacity)
	case o.convTTL < MinConversationTTL || o.convTTL > MaxConversationTTL:
		return pkg.Invalidf(op, "conversation TTL %v outside [%v, %v]", o.convTTL, MinConversationTTL, MaxConversationTTL)
	case o.dashTTL < time.Millisecond || o.dashTTL > MaxDashboardTTL:
		return pkg.Invalidf(op, "dashboard TTL %v outside [1ms, %v]", o.dashTTL, MaxDashboardTTL)
	case o.cache < 1 || o.cache > MaxMessageCache:
		return pkg.Invalidf(op, "message cache %d outside [1, %d]", o.cache, MaxMessageCache)
	}
	_, err := pkg.Key(op, rosterKey, o.ns, o.tag)
	return err
}
