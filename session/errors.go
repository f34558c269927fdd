package session

import "errors"

// Sentinel errors. Match them with errors.Is: the package wraps them with
// the operation and key at fault.
var (
	// ErrNotFound: no live session (never created, expired, evicted or
	// revoked), or no user record.
	ErrNotFound = errors.New("session: not found")
	// ErrInvalidInput: an argument was rejected before anything was
	// written (empty ID, oversize field, bad duration, reserved field name).
	// Key-building errors also match keys.ErrInvalidKey.
	ErrInvalidInput = errors.New("session: invalid input")
	// ErrInvalidToken: a refresh token or session handle does not match.
	ErrInvalidToken = errors.New("session: invalid token")
	// ErrTokenReused: a refresh token that was already rotated away was
	// presented again. The session has been revoked.
	ErrTokenReused = errors.New("session: refresh token reused; session revoked")
	// ErrBlocked: the user record's status is "blocked".
	ErrBlocked = errors.New("session: user blocked")
)
