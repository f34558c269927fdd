package mqtt

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is.
var (
	// ErrInvalid marks a bad option (New) or a message that is not a
	// reading (Parse): a topic without a type and a location, a payload
	// that is not a number, "on"/"off" or a JSON object, a bad timestamp.
	ErrInvalid = errors.New("mqtt: invalid argument")
)

var pkg = &call.Pkg{Name: "mqtt", ErrInvalid: ErrInvalid}
