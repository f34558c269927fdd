package cache

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key.
var (
	// ErrNotFound is what a loader returns (wrapped or not) when the
	// value does not exist; Get returns it too, from the loader or from a
	// cached "not found" (see WithNegativeTTL). A network failure or a
	// timeout is returned as such, never as ErrNotFound.
	ErrNotFound = errors.New("cache: not found")
	// ErrInvalid marks bad input (a nil client, an empty endpoint, a TTL
	// out of bounds, an oversize value, a bad option); nothing is written
	// to Redis. A value that cannot be a key segment also matches
	// keys.ErrInvalid.
	ErrInvalid = errors.New("cache: invalid argument")
	// ErrClosed is returned by calls on a Store or Cache after Close.
	ErrClosed = errors.New("cache: closed")
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "cache", ErrInvalid: ErrInvalid}
