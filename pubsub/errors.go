package pubsub

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrInvalid marks bad input: a nil client, a bad option, an empty,
	// oversize or invalid UTF-8 topic segment, a zero Topic, no topics, a
	// payload that does not encode or is larger than the Bus's limit.
	// Nothing is published or subscribed. A bad topic segment also
	// matches keys.ErrInvalid.
	ErrInvalid = errors.New("pubsub: invalid argument")
	// ErrMalformed marks a received message that is not a valid envelope,
	// is larger than the Bus's limit, or whose payload does not decode
	// into the topic's type. It arrives as Event.Err (which also matches
	// keys.ErrCorrupt and names the channel); the subscription goes on.
	ErrMalformed = errors.New("pubsub: malformed message")
)

// pkg is the package's error vocabulary.
var pkg = &call.Pkg{Name: "pubsub", ErrInvalid: ErrInvalid}
