package chat

import (
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// Option configures a Chat. Options only record; New checks them all.
type Option func(*options)

type options struct {
	ns       keys.Namespace
	tag      string
	noTag    bool
	strategy Strategy
	capacity int
	convTTL  time.Duration
	dashTTL  time.Duration
	cache    int
	lanes    int
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

// Defaults and bounds of the options and inputs.
const (
	// defaultTag is the deployment hash tag unless WithTag says otherwise.
	defaultTag = "main"
	// defaultCapacity is an admin's capacity unless AddAdmin or
	// WithCapacity says otherwise (the home-automation backend assigns
	// while SCARD < 10).
	defaultCapacity = 10
	// maxCapacity bounds an admin's capacity.
	maxCapacity = 1000
	// maxAdmins bounds a deployment's roster: every routing script reads
	// each admin's availability and load.
	maxAdmins = 100
	// defaultConversationTTL is how long a conversation stays open without
	// activity (the home-automation backend's 1 h on every chat key).
	defaultConversationTTL = time.Hour
	// minConversationTTL and maxConversationTTL bound WithConversationTTL.
	minConversationTTL = time.Second
	maxConversationTTL = 7 * 24 * time.Hour
	// defaultDashboardTTL is how long a computed dashboard is served
	// (the home-automation backend's 5 min).
	defaultDashboardTTL = 5 * time.Minute
	// maxDashboardTTL bounds WithDashboardTTL.
	maxDashboardTTL = time.Hour
	// defaultMessageCache is how many messages a conversation's cache
	// keeps (the home-automation backend's LTRIM 0 99).
	defaultMessageCache = 100
	// maxMessageCache bounds WithMessageCache.
	maxMessageCache = 1000
	// maxContentLen is the longest message content accepted, in bytes.
	maxContentLen = 16 << 10
	// maxIDLen is the longest conversation, admin or sender ID (and tag)
	// accepted, in bytes.
	maxIDLen = 256
	// maxPage is the most entries one listing returns.
	maxPage = 1000
)

// replayWindow is how long a conversation remembers a request and its
// first outcome, for go-redis's resends: a resend that reaches the server
// within it is answered with that outcome and changes nothing, however
// many other requests ran on the conversation meanwhile. It is longer
// than go-redis's whole default retry schedule (at worst about 2 minutes
// from the first run to the last resend; see docs/chat.md) and than any
// call whose context deadline is shorter.
const replayWindow = 3 * time.Minute

// WithNamespace puts every key and channel under ns (and the presence
// objects of Availability and Typing too).
//
// Default: the zero Namespace (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithTag sets the deployment hash tag: every key of the deployment
// carries {tag}, admin availability included, so that each script stays
// in one cluster slot. Run one Chat per tag to spread independent
// deployments (inboxes, tenants) over a cluster. The tag must be a valid
// key segment of 1 to 256 bytes.
//
// Default: "main".
func WithTag(tag string) Option { return func(o *options) { o.tag = tag } }

// WithoutTag drops the deployment's tag segment, so that every chat key
// is the home-automation backend's, byte for byte with
// keys.Namespace{Prefix: "ha:", NoHashTags: true}: chat:conversations:active,
// chat:conversations:unread, chat:conversation:{id}:messages,
// admin:{admin_id}:assignments, chat:admin:dashboard:{admin_id}, and
// admin availability at presence's admin:{admin_id}:presence, read with or
// without a TTL, as that system's own code leaves it (Availability and
// Typing get presence.WithOtherWriters). Its scripts then touch keys
// of many slots: it is for a standalone server, and New refuses it with a
// *redis.ClusterClient or a *redis.Ring, with a namespace that writes hash
// tags, or with WithTag. What the two sides share and where they still
// differ is in docs/chat.md, "Sharing the backend's keys".
//
// Default: off (the tag "main").
func WithoutTag() Option { return func(o *options) { o.noTag = true } }

// WithStrategy sets how the backlog is handed out.
//
// Default: LeastLoaded.
func WithStrategy(s Strategy) Option { return func(o *options) { o.strategy = s } }

// WithCapacity sets the capacity AddAdmin gives when it is passed 0.
//
// Default: 10. Range: 1 to 1000.
func WithCapacity(n int) Option { return func(o *options) { o.capacity = n } }

// WithConversationTTL sets how long a conversation stays open without
// activity. Every Chat of a deployment must use the same.
//
// Default: 1h. Range: 1s to 168h.
func WithConversationTTL(d time.Duration) Option { return func(o *options) { o.convTTL = d } }

// WithDashboardTTL sets how long a computed dashboard is served.
//
// Default: 5m. Range: 1ms to 1h.
func WithDashboardTTL(d time.Duration) Option { return func(o *options) { o.dashTTL = d } }

// WithMessageCache sets how many messages a conversation's cache keeps.
//
// Default: 100. Range: 1 to 1000.
func WithMessageCache(n int) Option { return func(o *options) { o.cache = n } }

// WithPipelining sets how many round trips one Chat keeps in flight at
// once (auto-pipelining). A call made while none is in flight is sent at
// once, on its own; calls made while some are in flight wait and go out
// together, as one pipeline, when a round trip comes back. Every call is
// still one atomic script with its own reply. n = 0 turns
// auto-pipelining off (every call its own round trip). When a connection
// breaks mid-pipeline, go-redis resends the whole pipeline: each request
// then reports its first outcome (see "Idempotence under retry" in
// docs/chat.md).
//
// Default: 4. Range: 0 to 1024.
func WithPipelining(n int) Option { return func(o *options) { o.lanes = n } }

// WithPresence passes options to the presence objects Availability and
// Typing return (a typing profile, pipelining). Their namespace and
// availability tag are always the Chat's.
//
// Default: presence's defaults.
func WithPresence(opts ...presence.Option) Option {
	return func(o *options) { o.presence = append(o.presence, opts...) }
}

// defaults are the options of a Chat built without any.
func defaults() options {
	return options{tag: defaultTag, capacity: defaultCapacity, convTTL: defaultConversationTTL,
		dashTTL: defaultDashboardTTL, cache: defaultMessageCache, lanes: call.DefaultLanes}
}

// check validates the options for New and NewInspector.
func (o *options) check(op string) error {
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	switch {
	case o.tag == "" || len(o.tag) > maxIDLen:
		return pkg.Invalidf(op, "tag %.64q: want 1 to %d bytes", o.tag, maxIDLen)
	case o.strategy != LeastLoaded && o.strategy != RoundRobin:
		return pkg.Invalidf(op, "unknown strategy %d", int(o.strategy))
	case o.capacity < 1 || o.capacity > maxCapacity:
		return pkg.Invalidf(op, "capacity %d outside [1, %d]", o.capacity, maxCapacity)
	case o.convTTL < minConversationTTL || o.convTTL > maxConversationTTL:
		return pkg.Invalidf(op, "conversation TTL %v outside [%v, %v]", o.convTTL, minConversationTTL, maxConversationTTL)
	case o.dashTTL < time.Millisecond || o.dashTTL > maxDashboardTTL:
		return pkg.Invalidf(op, "dashboard TTL %v outside [1ms, %v]", o.dashTTL, maxDashboardTTL)
	case o.cache < 1 || o.cache > maxMessageCache:
		return pkg.Invalidf(op, "message cache %d outside [1, %d]", o.cache, maxMessageCache)
	}
	if err := pkg.CheckLanes(op, o.lanes); err != nil {
		return err
	}
	if o.noTag && o.tag != defaultTag {
		return pkg.Invalidf(op, "WithoutTag and WithTag(%.64q) together", o.tag)
	}
	if o.noTag && !o.ns.NoHashTags {
		return pkg.Invalidf(op, "WithoutTag needs a namespace with NoHashTags: the backend's keys have no hash tags")
	}
	_, err := o.key(op, rosterKey)
	return err
}

// key returns the key of template t (the tagged one; its untagged twin
// with WithoutTag) for the values ids after the tag.
func (o *options) key(op string, t *keys.Template, ids ...string) (string, error) {
	if o.noTag {
		return pkg.Key(op, untagged[t], o.ns, ids...)
	}
	return pkg.Key(op, t, o.ns, append([]string{o.tag}, ids...)...)
}
