package keys

import (
	"errors"
	"fmt"
)

// ErrInvalidKey is returned (wrapped in a *SegmentError) when a value cannot
// be placed in a key: it is empty, too long, or not valid UTF-8. Nothing is
// written to Redis when a key cannot be built.
var ErrInvalidKey = errors.New("keys: invalid key")

// ErrInvalidPattern is returned when a Pattern cannot be registered: a
// malformed template, an unknown tag placeholder, a missing TTL without a
// reason to persist, or a template registered twice.
var ErrInvalidPattern = errors.New("keys: invalid pattern")

// ErrInvalidNamespace is returned when a Namespace prefix contains bytes that
// would break hash tags or SCAN patterns.
var ErrInvalidNamespace = errors.New("keys: invalid namespace")

// ErrInvalidLayout is returned by Layout.Clients for a database number
// that cannot be used: a negative one, or one other than 0 on a cluster.
var ErrInvalidLayout = errors.New("keys: invalid layout")

// ErrNoMatch is returned by Template.Parse when a key was not built from the
// template in the given namespace.
var ErrNoMatch = errors.New("keys: key does not match pattern")

// ErrCorrupt marks data found in Redis that does not parse as the schema
// says: a foreign value, a hand edit, or a bug. Errors that wrap it are
// *CorruptError values and name the key.
var ErrCorrupt = errors.New("keys: corrupt value")

// SegmentError says which placeholder of which template rejected a value and
// why. It wraps ErrInvalidKey.
type SegmentError struct {
	Template    string // the pattern's template, e.g. "presence:{user_id}"
	Placeholder string // the placeholder name, e.g. "user_id"
	Reason      string // "empty", "longer than 1024 bytes", ...
}

// Error names the template, the placeholder and the reason.
func (e *SegmentError) Error() string {
	return fmt.Sprintf("keys: invalid key for %q: segment {%s} is %s", e.Template, e.Placeholder, e.Reason)
}

// Unwrap returns ErrInvalidKey.
func (e *SegmentError) Unwrap() error { return ErrInvalidKey }

// CorruptError reports a value stored at Key that could not be decoded. It
// matches ErrCorrupt with errors.Is and unwraps to the decoder's error too.
type CorruptError struct {
	Key string // the Redis key (namespace included)
	Err error  // the decoder's error
}

// Error names the key and the decoder's complaint.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("keys: corrupt value at %q: %v", e.Key, e.Err)
}

// Unwrap returns ErrCorrupt and the underlying decode error.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// Corrupt wraps err as a *CorruptError naming key. It returns nil for a nil err.
func Corrupt(key string, err error) error {
	if err == nil {
		return nil
	}
	return &CorruptError{Key: key, Err: err}
}
