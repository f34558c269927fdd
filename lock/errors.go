package lock

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key, often with a
// context error beside them.
var (
	// ErrNotObtained means the lock, permit or interval run was not
	// obtained because someone else holds it (or, from Acquire, because
	// the wait ran out while someone held it). A network failure or a
	// timeout on the wire is returned as such, never as ErrNotObtained.
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld means a Release, Refresh or TTL found that the caller no
	// longer holds the lease: it expired, was released, or another owner
	// holds the resource now.
	ErrNotHeld = errors.New("lock: not held")
	// ErrLockLost is the cause of a Lock's Context when the lease was lost
	// (its refresh failed or its lease ran out), and the error of Refresh
	// after that moment.
	ErrLockLost = errors.New("lock: lock lost")
	// ErrInvalid marks bad input (a nil client, an empty resource, a TTL
	// <= 0 or above the client's maximum, a bad option); nothing is written
	// to Redis. A value that cannot be a key segment also matches
	// keys.ErrInvalid.
	ErrInvalid = errors.New("lock: invalid argument")
	// ErrNotDurable: with WithDurability, a lease taken or extended (the
	// call's result comes with it) that fewer replicas than asked
	// acknowledged in time, so a failover may still lose it. It is the
	// same error in every package (queue.ErrNotDurable,
	// session.ErrNotDurable).
	ErrNotDurable = call.ErrNotDurable
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "lock", ErrInvalid: ErrInvalid}
