package session

import (
	"fmt"
	"time"

	"github.com/redschema/redschema/keys"
)

// Defaults, from the seeds: seed 001 §11 (sessions 3600 s sliding, 86400 s
// max) and seed 000 §4 (user records 7 days, refreshed on each request).
const (
	// DefaultIdleTimeout is the sliding idle timeout (seed 001: 3600 s).
	DefaultIdleTimeout = time.Hour
	// DefaultMaxLifetime is the absolute lifetime cap (seed 001: 86400 s).
	DefaultMaxLifetime = 24 * time.Hour
	// DefaultUserTTL is the user record TTL (seed 000: 604800 s).
	DefaultUserTTL = 7 * 24 * time.Hour
	// DefaultRefreshHistory is how many rotated-away refresh-token hashes a
	// session remembers for reuse detection.
	DefaultRefreshHistory = 8
)

// Option configures a Store or Users. Options that do not apply to the
// type being built (WithMaxSessions for Users, WithUserTTL for Store)
// have no effect there, but their values are still validated.
type Option func(*config)

type config struct {
	ns          keys.Namespace
	idle        time.Duration
	life        time.Duration
	maxSessions int
	history     int
	userTTL     time.Duration
}

func newConfig(opts []Option) (config, error) {
	c := config{idle: DefaultIdleTimeout, life: DefaultMaxLifetime, history: DefaultRefreshHistory, userTTL: DefaultUserTTL}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if err := c.ns.Validate(); err != nil {
		return c, err
	}
	bad := func(format string, a ...any) (config, error) {
		return c, fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, a...))
	}
	switch {
	case c.idle < time.Millisecond:
		return bad("idle timeout %v must be at least 1ms", c.idle)
	case c.life < time.Millisecond:
		return bad("max lifetime %v must be at least 1ms", c.life)
	case c.idle > c.life:
		return bad("idle timeout %v exceeds the max lifetime %v", c.idle, c.life)
	case c.maxSessions < 0:
		return bad("max sessions %d is negative", c.maxSessions)
	case c.history < 1 || c.history > 64:
		return bad("refresh history %d is outside 1..64", c.history)
	case c.userTTL < time.Millisecond:
		return bad("user TTL %v must be at least 1ms", c.userTTL)
	}
	return c, nil
}

// WithNamespace puts every key under ns (prefix, hash-tag mode). The
// constructor validates it.
func WithNamespace(ns keys.Namespace) Option { return func(c *config) { c.ns = ns } }

// WithIdleTimeout sets the sliding idle timeout: a session not used for d
// ends. Default DefaultIdleTimeout (seed: 3600 s). It must be > 0 and at
// most the max lifetime.
func WithIdleTimeout(d time.Duration) Option { return func(c *config) { c.idle = d } }

// WithMaxLifetime sets the absolute lifetime cap, counted from creation,
// that sliding never passes. Default DefaultMaxLifetime (seed: 86400 s).
func WithMaxLifetime(d time.Duration) Option { return func(c *config) { c.life = d } }

// WithMaxSessions caps the live sessions per user; Create evicts the
// sessions that would expire first (the least recently active) to stay
// within n. Zero, the default, means no cap.
func WithMaxSessions(n int) Option { return func(c *config) { c.maxSessions = n } }

// WithRefreshHistory sets how many rotated-away refresh-token hashes each
// session keeps for reuse detection (1..64, default 8).
func WithRefreshHistory(n int) Option { return func(c *config) { c.history = n } }

// WithUserTTL sets the user record TTL that Login, Validate and Block
// refresh. Default DefaultUserTTL (seed 000: 7 days).
func WithUserTTL(d time.Duration) Option { return func(c *config) { c.userTTL = d } }
