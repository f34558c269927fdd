package chat

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key.
var (
	// ErrInvalid marks bad input (an empty or oversize ID, an unknown
	// priority or sender role, an oversize message, a capacity < 1, a bad
	// option); nothing is written to Redis. A value that cannot be a key
	// segment also matches keys.ErrInvalid.
	ErrInvalid = errors.New("chat: invalid argument")
	// ErrNotFound means the conversation is not open: never opened,
	// resolved, or expired after the conversation TTL without activity.
	ErrNotFound = errors.New("chat: conversation not found")
	// ErrUnknownAdmin means the admin is not in the deployment's roster
	// (see Chat.AddAdmin).
	ErrUnknownAdmin = errors.New("chat: unknown admin")
	// ErrUnavailable means an explicit assignment or transfer named an
	// admin whose availability is not online.
	ErrUnavailable = errors.New("chat: admin not available")
	// ErrFull means an explicit assignment or transfer named an admin
	// already at capacity.
	ErrFull = errors.New("chat: admin at capacity")
	// ErrNotAssigned means a Transfer found the conversation assigned to
	// someone other than the admin it was to be taken from (or to nobody).
	ErrNotAssigned = errors.New("chat: not assigned to that admin")
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "chat", ErrInvalid: ErrInvalid}

// Reasons given for data this package did not write.
var (
	errBadState = errors.New(`a conversation state is not "band stamp waiting admin"`)
	errBadTime  = errors.New("a score is not a time in Unix ms")
	errBadScore = errors.New("a score is not band x 2^51 + (2^51 - 1 - stamp)")
)

var errUnexpected = errors.New("unexpected script reply")
