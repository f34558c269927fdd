package session

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Defaults (the AI platform's session timeouts and the home-automation
// backend's user TTL: see "Reference layouts" in docs/session.md).
const (
	// defaultIdleTimeout is the sliding idle timeout: 3600 s.
	defaultIdleTimeout = time.Hour
	// defaultLifetime is the absolute lifetime cap: 86400 s.
	defaultLifetime = 24 * time.Hour
	// defaultUserTTL is the user record TTL: 7 days, refreshed on each
	// request.
	defaultUserTTL = 7 * 24 * time.Hour
	// defaultRefreshHistory is how many rotated-away refresh-token hashes a
	// session remembers for reuse detection.
	defaultRefreshHistory = 8
	// defaultRotationGrace is how long a client that saw an error on
	// RotateRefresh may retry with the same (old) refresh token and get
	// the new one the lost run made (WithRotationGrace): 3 minutes, more
	// than go-redis's default retries can take to give up (up to about
	// 2 min 8 s after the first send).
	defaultRotationGrace = 3 * time.Minute
)

// Bounds on durations and sizes; beyond them New, NewUsers and
// RevokeToken fail with ErrInvalid before anything is written.
const (
	// maxLifetime bounds WithMaxLifetime and WithIdleTimeout: 365
	// days. A deadline further ahead in Redis is not one this package
	// wrote (keys.ErrCorrupt).
	maxLifetime = 365 * 24 * time.Hour
	// maxUserTTL bounds WithUserTTL: 365 days.
	maxUserTTL = 365 * 24 * time.Hour
	// maxSessions bounds WithMaxSessions: 10000 sessions per user.
	maxSessions = 10000
	// maxRefreshHistory bounds WithRefreshHistory: 64 hashes.
	maxRefreshHistory = 64
	// maxRotationGrace bounds WithRotationGrace: 1 hour.
	maxRotationGrace = time.Hour
	// maxTokenExpiry bounds how far ahead (by the server's clock) the
	// expiry given to RevokeToken may lie: 365 days.
	maxTokenExpiry = 365 * 24 * time.Hour
	// replayWindow is how long the server remembers the outcome of a
	// Revoke, RevokeAll, RevokeOthers, Login or Unblock call, or of a
	// RotateRefresh that found a reused token, so that the
	// same call resent by go-redis after a lost reply reports its first
	// outcome: 3 minutes, longer than go-redis v9's whole default retry
	// schedule (at worst about 2 min 8 s; see docs/queue.md).
	replayWindow = 3 * time.Minute
)

// Option configures a Store or Users; New and NewUsers check every option
// and fail with ErrInvalid on a bad one. Options that do not apply to the
// type being built (WithMaxSessions for Users, WithUserTTL for Store) have
// no effect there, but their values are still checked.
type Option func(*options)

type options struct {
	ns          keys.Namespace
	idle        time.Duration
	life        time.Duration
	maxSessions int
	history     int
	grace       time.Duration
	userTTL     time.Duration
	lanes       int
	durable     call.Durability
	events      int
	activeField bool
}

// newOptions is every constructor's preamble (op names it): the options
// over the defaults (call.Configure, with check), then WithDurability
// checked against the client.
func newOptions(op string, rdb redis.UniversalClient, opts []Option) (options, error) {
	o, err := call.Configure(pkg, op, rdb, defaults(), opts, (*options).check)
	if err != nil {
		return o, err
	}
	return o, o.durable.Check(pkg, op, "WithDurability", rdb)
}

// defaults are the options of a constructor given none.
func defaults() options {
	return options{idle: defaultIdleTimeout, life: defaultLifetime, history: defaultRefreshHistory, grace: defaultRotationGrace, userTTL: defaultUserTTL, lanes: call.DefaultLanes}
}

// check validates the options for every constructor.
func (o *options) check(op string) error {
	switch {
	case o.life < time.Millisecond || o.life > maxLifetime:
		return pkg.Invalidf(op, "max lifetime %v outside [1ms, %v]", o.life, maxLifetime)
	case o.idle < time.Millisecond || o.idle > o.life:
		return pkg.Invalidf(op, "idle timeout %v outside [1ms, max lifetime %v]", o.idle, o.life)
	case o.maxSessions < 0 || o.maxSessions > maxSessions:
		return pkg.Invalidf(op, "max sessions %d outside [0, %d]", o.maxSessions, maxSessions)
	case o.history < 1 || o.history > maxRefreshHistory:
		return pkg.Invalidf(op, "refresh history %d outside [1, %d]", o.history, maxRefreshHistory)
	case o.grace != 0 && (o.grace < time.Millisecond || o.grace > maxRotationGrace):
		return pkg.Invalidf(op, "rotation grace %v outside 0 or [1ms, %v]", o.grace, maxRotationGrace)
	case o.userTTL < time.Millisecond || o.userTTL > maxUserTTL:
		return pkg.Invalidf(op, "user TTL %v outside [1ms, %v]", o.userTTL, maxUserTTL)
	case o.events < 0 || o.events > maxEvents:
		return pkg.Invalidf(op, "events length %d outside [0, %d]", o.events, maxEvents)
	}
	if err := pkg.CheckLanes(op, o.lanes); err != nil {
		return err
	}
	if err := o.ns.Validate(); err != nil {
		return pkg.Invalid(op, err)
	}
	return nil
}

// WithDurability makes the writes a failover must not lose wait, in their
// own round trip, until replicas replicas acknowledged them, for at most
// timeout: Create, Renew, RotateRefresh, Revoke, RevokeAll, RevokeOthers,
// RevokeToken and Users.Block (a lost revocation or block would let a
// credential work again after a failover; a lost create logs a user out).
// The script and a WAIT go out as one pipeline to the user's master (these
// calls are then not auto-pipelined). When fewer replicas acknowledge in
// time the call returns its result (the session and tokens, the fresh
// refresh token, the count) with an error matching ErrNotDurable: the
// write was done, but a failover may still lose it; sending a revocation
// again is safe. replicas is 1 to 64 and timeout 1ms to 1 min and under
// the client's ReadTimeout, and the client must be a *redis.Client or a
// *redis.ClusterClient, else New fails with ErrInvalid. What a failover
// loses without it, measured, is in docs/session.md ("Failover and
// durability").
//
// Default: off.
func WithDurability(replicas int, timeout time.Duration) Option {
	return func(o *options) { o.durable = call.Durability{Replicas: replicas, Timeout: timeout} }
}

// WithNamespace puts every key under ns (a prefix, and the hash-tag mode).
//
// Default: the zero keys.Namespace (no prefix, hash tags on).
func WithNamespace(ns keys.Namespace) Option { return func(o *options) { o.ns = ns } }

// WithIdleTimeout sets the sliding idle timeout: a session not used for d
// ends. It may not exceed the max lifetime (WithMaxLifetime).
//
// Default: 1h. Range: 1ms to the max lifetime.
func WithIdleTimeout(d time.Duration) Option { return func(o *options) { o.idle = d } }

// WithMaxLifetime sets the absolute lifetime cap, counted from creation,
// that sliding never passes. A deadline further ahead in Redis than the
// range's top is not one this package wrote (keys.ErrCorrupt).
//
// Default: 24h. Range: 1ms to 8760h (365 days).
func WithMaxLifetime(d time.Duration) Option { return func(o *options) { o.life = d } }

// WithMaxSessions caps the live sessions per user; Create evicts the
// sessions that would expire first (the least recently active) to stay
// within n. Zero means no cap.
//
// Default: 0 (no cap). Range: 0 to 10000.
func WithMaxSessions(n int) Option { return func(o *options) { o.maxSessions = n } }

// WithRefreshHistory sets how many rotated-away refresh-token hashes each
// session keeps for reuse detection.
//
// Default: 8. Range: 1 to 64.
func WithRefreshHistory(n int) Option { return func(o *options) { o.history = n } }

// WithRotationGrace sets how long after a rotation RotateRefresh still
// accepts the rotated-away refresh token as a retry of that rotation, for
// a client that saw an error (a reply lost after go-redis's retries ran
// out) and never received the new token: presented again within d, and
// while the new token has not been rotated in turn, the old token gets
// that same new token back instead of revoking the session. Outside
// those bounds it is reuse, as before. d is 0 (off: a rotated-away token
// is always reuse) or 1ms to 1h. The default, 3 minutes, is more than
// go-redis's default retries can take to give up (up to about 2 min 8 s
// after the first send). Within d, whoever holds the old token gets the
// new one: a stolen token is then caught as reuse only when it, or a
// token it led to, is presented after its own rotation's grace or after
// the token that replaced it was rotated again (see "Refresh tokens" in
// docs/session.md).
//
// Default: 3m. Range: 0 to 1h.
func WithRotationGrace(d time.Duration) Option { return func(o *options) { o.grace = d } }

// WithUserTTL sets the user record TTL that Login, Validate and Block
// refresh.
//
// Default: 168h (7 days). Range: 1ms to 8760h (365 days).
func WithUserTTL(d time.Duration) Option { return func(o *options) { o.userTTL = d } }

// WithPipelining sets how many round trips one Store keeps in flight at
// once for Get, Create and IsRevoked (auto-pipelining). A call made while none is in flight is
// sent at once, on its own; calls made while some are in flight wait and
// go out together, as one pipeline, when a round trip comes back, or at
// once in a new round trip (up to n) when as many wait as are in flight.
// Every call is still one atomic script with its own reply; many
// goroutines calling at once share the network reads and writes, which
// under load cost the client and Redis more than the scripts do. n = 0
// turns auto-pipelining off (every call its own round trip). On a Redis
// Cluster the n round trips are shared by the masters, each of which may
// always have one in flight. When a connection breaks
// mid-pipeline, go-redis resends the whole pipeline: a resent Create
// finds its own session and reports it, a resent Get slides the session
// again (see "Replays" in docs/session.md). Users ignores it.
//
// Default: 4. Range: 0 to 1024.
func WithPipelining(n int) Option { return func(o *options) { o.lanes = n } }

// WithEvents turns on lifecycle events (see Event): the scripts that
// create, revoke, evict or prune a session append one event each to the
// events stream of the user's cluster slot, in the same atomic step, and
// each stream keeps about n events (XADD MAXLEN ~ n). Zero emits
// nothing. It costs server
// time on the calls that emit (an XADD each; Create also schedules the
// user for Sweep: a ZADD and a PTTL; a prune first reads the entries it
// removes) and no extra command on a Get of a live session,
// but every index then outlives its last session by Store.SweepWindow, so that
// Sweep (RunSweeper) can announce expiries no other call noticed: run a
// sweeper with events on. Every Store that writes to the namespace must
// have it (a Store without it prunes and revokes without emitting), and
// sessions made before it was turned on may expire unannounced. Users
// ignores it.
//
// Default: 0 (off). Range: 0 to 1048576.
func WithEvents(n int) Option { return func(o *options) { o.events = n } }

// WithActiveField makes Users write the home-automation backend's active
// flag beside the status, for a record shared with that system's own code
// (whose validator refuses a user unless active is 'true'): Login writes
// active 'true' (anonymous users too: that code knows no read-only
// users), Block 'false' and Unblock 'true', where without it they only
// keep a flag the record already has in step. Users read the flag in
// every mode (see Users). Store ignores it. See docs/session.md, "The
// active flag".
//
// Default: off.
func WithActiveField() Option { return func(o *options) { o.activeField = true } }
