package keys

import (
	"errors"
	"fmt"
)

// ErrInvalid is returned for input keys cannot use, before anything is
// written to Redis: a value that cannot be placed in a key (empty, longer
// than maxSegmentLen bytes, not valid UTF-8, or the wrong number of
// values), a Namespace prefix that would break hash tags or SCAN patterns,
// a Pattern that cannot be compiled or composed (a malformed template, an
// unknown tag placeholder, a missing TTL without a reason to persist, a
// template declared twice), or a Layout database that cannot be used (a
// negative one, or one other than 0 on a cluster). The message says which.
var ErrInvalid = errors.New("keys: invalid")

// errNoMatch is wrapped by Template.Parse's error when a key was not built from the
// template in the given namespace.
var errNoMatch = errors.New("keys: key does not match pattern")

// ErrCorrupt marks data found in Redis that does not parse as the schema
// says: a foreign value, a hand edit, or a bug. Errors that wrap it are
// *CorruptError values and name the key.
var ErrCorrupt = errors.New("keys: corrupt value")

// segmentError says which placeholder of which template rejected a value
// and why. It wraps ErrInvalid.
type segmentError struct {
	template    string // the pattern's template, e.g. "presence:{user_id}"
	placeholder string // the placeholder name, e.g. "user_id"
	reason      string // "empty", "longer than 1024 bytes", ...
}

func (e *segmentError) Error() string {
	return fmt.Sprintf("keys: invalid key for %q: segment {%s} is %s", e.template, e.placeholder, e.reason)
}

func (e *segmentError) Unwrap() error { return ErrInvalid }

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
