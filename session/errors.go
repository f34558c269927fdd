package session

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key at fault.
var (
	// ErrNotFound: no live session (never created, expired, evicted or
	// revoked), or no user record.
	ErrNotFound = errors.New("session: not found")
	// ErrInvalid: an argument was rejected before anything was written
	// (a nil client, an empty ID, an oversize field, a bad duration, a
	// reserved field name). A value that cannot be a key segment also
	// matches keys.ErrInvalid.
	ErrInvalid = errors.New("session: invalid argument")
	// ErrInvalidToken: a refresh token or session handle does not match.
	ErrInvalidToken = errors.New("session: invalid token")
	// ErrTokenReused: a refresh token that was already rotated away was
	// presented again. The session has been revoked.
	ErrTokenReused = errors.New("session: refresh token reused; session revoked")
	// ErrBlocked: the user record's status is "blocked".
	ErrBlocked = errors.New("session: user blocked")
	// ErrEventsTrimmed: an EventReader's Read found a slot's events
	// stream trimmed past the reader's position there (each keeps about
	// the WithEvents length), so events that followed it may be gone
	// unread. It comes with the events read (from the oldest kept), and
	// the reader moves past them: the next Read does not report it
	// again. A consumer that keeps state from the events should rebuild
	// it from the sessions (List, ListUsers).
	ErrEventsTrimmed = errors.New("session: events trimmed before they were read")
	// ErrNotDurable: with WithDurability, a write that was done (the
	// call's result comes with it) but that fewer replicas than asked
	// acknowledged in time, so a failover may still lose it. It is the
	// same error in every package (queue.ErrNotDurable,
	// lock.ErrNotDurable).
	ErrNotDurable = call.ErrNotDurable
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "session", ErrInvalid: ErrInvalid}
