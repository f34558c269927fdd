package ratelimit

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key.
var (
	// ErrInvalid marks bad input, reported before anything is written: a
	// nil client, a policy or option that cannot work (a zero or negative
	// rate or period, a burst on an algorithm without one, two rules
	// sharing a key, an empty endpoint), a cost below 1 or above what the
	// policy can ever admit, a Block outside 1ms..366 days, a Config value
	// out of range, an unusable identifier (which also matches
	// keys.ErrInvalid). The message says which.
	ErrInvalid = errors.New("ratelimit: invalid argument")
	// ErrNoRuntimeConfig reports SetConfig or Config on a Limiter built
	// without WithRuntimeConfig, whose checks would never read the config.
	ErrNoRuntimeConfig = errors.New("ratelimit: limiter has no runtime config")
	// ErrNoKey is returned by a KeyFunc when the request carries no usable
	// identifier (no API key header, an unparsable client address). The
	// middleware answers such requests with 400 Bad Request.
	ErrNoKey = errors.New("ratelimit: no rate-limit key in request")
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "ratelimit", ErrInvalid: ErrInvalid}
