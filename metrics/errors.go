package metrics

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key.
var (
	// ErrInvalid marks bad input, reported before anything is written: a
	// nil client or one without ContextTimeoutEnabled, a Ring client, an
	// option out of its documented range, a metric name that is not
	// [a-zA-Z_][a-zA-Z0-9_]* or is declared twice with another shape,
	// label names or bucket bounds that cannot work. A value that cannot
	// be a key segment also matches keys.ErrInvalid.
	ErrInvalid = errors.New("metrics: invalid argument")
	// ErrClosed is returned by Flush after Close, and by Close the second
	// time.
	ErrClosed = errors.New("metrics: recorder closed")
	// ErrNotLeader is returned by Rollup.RunOnce when another instance
	// holds the rollup lease of every metric it was asked to drain.
	ErrNotLeader = errors.New("metrics: rollup lease held by another instance")
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "metrics", ErrInvalid: ErrInvalid}
