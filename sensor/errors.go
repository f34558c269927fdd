package sensor

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key.
var (
	// ErrInvalid marks bad input: an empty, malformed, reserved or (with
	// WithTypes / WithLocations) unknown type or location, a NaN or
	// infinite value, a timestamp before 2000 or further in the future
	// than WithMaxFuture allows, an oversize field, a bad option. Nothing
	// is written. A value that cannot be a key segment also matches
	// keys.ErrInvalid.
	ErrInvalid = errors.New("sensor: invalid argument")
	// ErrNotFound means the query found no reading (Current), or no
	// motion (SinceMotion), within the retention window.
	ErrNotFound = errors.New("sensor: not found")
	// ErrTooMany means a query would scan more than 200,000 raw readings
	// in one call: ask a rollup tier, or a shorter range.
	ErrTooMany = errors.New("sensor: too many readings for one call")
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "sensor", ErrInvalid: ErrInvalid}
