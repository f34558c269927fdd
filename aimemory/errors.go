package aimemory

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key.
var (
	// ErrInvalid marks bad input (a nil client, a bad option, an unknown
	// role, empty content, negative tokens, an oversize message, a bad
	// window or budget); nothing is written to Redis. A value that cannot
	// be a key segment also matches keys.ErrInvalid.
	ErrInvalid = errors.New("aimemory: invalid argument")
	// ErrBudgetExceeded means an Append would take the user's tokens of
	// the day past the daily budget; nothing was appended.
	ErrBudgetExceeded = errors.New("aimemory: daily token budget exceeded")
	// ErrBudgetTooSmall means a window's token budget cannot hold the
	// conversation's system prompt, which every window contains.
	ErrBudgetTooSmall = errors.New("aimemory: token budget below the system prompt")
	// ErrStreamEnded means a Stream was used after End.
	ErrStreamEnded = errors.New("aimemory: stream ended")
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "aimemory", ErrInvalid: ErrInvalid}
