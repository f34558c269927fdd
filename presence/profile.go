package presence

import (
	"fmt"
	"time"
)

// Format selects the presence JSON a profile writes and reads.
type Format int

// The formats. Times are Unix milliseconds of the server clock.
const (
	// FormatDetailed writes
	// {"status","lastSeen","activeConnections","metadata":{"device","lastActivity"}}
	// (metadata members only when set).
	FormatDetailed Format = iota
	// FormatCompact writes {"userId","status","lastSeen"}.
	FormatCompact
)

func (f Format) arg() string {
	if f == FormatCompact {
		return "compact"
	}
	return "detailed"
}

// Layout selects where a tracker stores a user's connections.
type Layout int

// The layouts. All trackers writing one namespace must use the same one:
// a tracker of the other layout does not see the connections and turns
// their users offline.
const (
	// LayoutHash (the default) keeps the presence JSON in
	// presence:{user_id} and one field per connection in the hash
	// connections:{user_id}.
	LayoutHash Layout = iota
	// LayoutSingleKey keeps only presence:{user_id}: the presence JSON of
	// the profile's Format with one more member, last, "connections":
	// {connection ID: [connectedAt, lastSeen, metadata], ...}. Readers of
	// the presence key (GET, JSON.parse(v).status, activeConnections) keep
	// working; HGETALL connections:{user_id} finds nothing. It takes about
	// 40% fewer bytes per user with two connections than LayoutHash
	// (bench/RESULTS.md) because it saves a key and the hash's per-field
	// overhead, at the cost of a larger value that every GET (Get, GetMany,
	// Online) transfers. See "Layouts" in docs/presence.md for the
	// figures and what readers of the old layout must change.
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

// Profile holds the lifetimes and the presence format of one deployment.
// Every tracker, Typing and Availability writing one namespace must use
// the same profile. Durations are rounded up to whole milliseconds.
type Profile struct {
	// Format is the presence JSON written and read.
	Format Format
	// TTL is how long a user stays online after the freshest heartbeat of
	// any of their connections, and how long a connection lives after its
	// own last heartbeat (a connection whose lastSeen is TTL old is stale
	// and pruned). The presence key and the connections hash expire then.
	// It must be in [1ms, 24h].
	TTL time.Duration
	// Heartbeat is the interval at which clients should call Heartbeat. It
	// is advice for callers (the examples use it); it must be positive and
	// below TTL.
	Heartbeat time.Duration
	// Retention is how long the presence key of a user who went offline
	// keeps "lastSeen" before it expires: zero (delete it at once) or in
	// [1ms, 720h] (30 days).
	Retention time.Duration
	// TypingTTL is the lifetime of a typing indicator, in [1ms, 1h].
	TypingTTL time.Duration
	// TypingThrottle is the minimum interval between two accepted
	// Typing.Start writes of one user in one conversation: zero (no
	// throttle) or in [1ms, 1h].
	TypingThrottle time.Duration
}

// Bounds of a Profile's durations.
const (
	// maxTTL is the longest online TTL a profile may have.
	maxTTL = 24 * time.Hour
	// maxRetention is the longest offline retention a profile may have.
	maxRetention = 30 * 24 * time.Hour
	// maxTypingTTL is the longest typing TTL, and typing throttle, a
	// profile may have.
	maxTypingTTL = time.Hour
)

// DetailedProfile returns the profile New uses by default: FormatDetailed
// JSON, online for 60 s after the freshest heartbeat (heartbeat every
// 30 s), "last seen" kept 600 s after going offline; typing indicators of
// 3 s, throttled to one write per 2 s.
func DetailedProfile() Profile {
	return Profile{Format: FormatDetailed, TTL: 60 * time.Second, Heartbeat: 30 * time.Second,
		Retention: 600 * time.Second, TypingTTL: 3 * time.Second, TypingThrottle: 2 * time.Second}
}

// CompactProfile returns a profile of FormatCompact JSON, online for 300 s
// after the freshest heartbeat (heartbeat every 100 s), deleted on going
// offline (no retention); typing indicators of 3 s, throttled to one write
// per 2 s.
func CompactProfile() Profile {
	return Profile{Format: FormatCompact, TTL: 300 * time.Second, Heartbeat: 100 * time.Second,
		TypingTTL: 3 * time.Second, TypingThrottle: 2 * time.Second}
}

// validate checks p's bounds and returns it with its durations rounded up
// to whole milliseconds.
func (p Profile) validate(op string) (Profile, error) {
	bad := func(format string, args ...any) (Profile, error) {
		return Profile{}, pkg.Invalidf(op, "profile: "+format, args...)
	}
	switch {
	case p.Format != FormatDetailed && p.Format != FormatCompact:
		return bad("unknown format %d", int(p.Format))
	case p.TTL < time.Millisecond || p.TTL > maxTTL:
		return bad("TTL %v outside [1ms, %v]", p.TTL, maxTTL)
	case p.Heartbeat <= 0 || p.Heartbeat >= p.TTL:
		return bad("heartbeat %v must be positive and below the TTL %v", p.Heartbeat, p.TTL)
	case p.Retention != 0 && (p.Retention < time.Millisecond || p.Retention > maxRetention):
		// the scripts take milliseconds: 0 < Retention < 1ms would silently
		// mean "delete at once"
		return bad("retention %v neither zero nor in [1ms, %v]", p.Retention, maxRetention)
	case p.TypingTTL < time.Millisecond || p.TypingTTL > maxTypingTTL:
		return bad("typing TTL %v outside [1ms, %v]", p.TypingTTL, maxTypingTTL)
	case p.TypingThrottle != 0 && (p.TypingThrottle < time.Millisecond || p.TypingThrottle > maxTypingTTL):
		return bad("typing throttle %v neither zero nor in [1ms, %v]", p.TypingThrottle, maxTypingTTL)
	}
	p.TTL, p.Retention = msUp(p.TTL), msUp(p.Retention)
	p.TypingTTL, p.TypingThrottle = msUp(p.TypingTTL), msUp(p.TypingThrottle)
	return p, nil
}

// msUp rounds d up to whole milliseconds.
func msUp(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}
