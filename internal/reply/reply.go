// Package reply type-checks values returned by Redis and Lua scripts, so a
// surprising reply becomes an error instead of a panic.
package reply

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrUnexpected is wrapped by every error of this package.
var ErrUnexpected = errors.New("unexpected reply")

func bad(want string, v any) error {
	return fmt.Errorf("%w: want %s, got %T(%.64v)", ErrUnexpected, want, v, v)
}

// Int64 accepts an integer reply, or a string holding a base-10 integer.
func Int64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, bad("integer", v)
		}
		return n, nil
	}
	return 0, bad("integer", v)
}

// Float64 accepts a string holding a number (Lua returns floats as strings),
// or an integer.
func Float64(v any) (float64, error) {
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, bad("number", v)
		}
		return f, nil
	}
	return 0, bad("number", v)
}

// String accepts a bulk or status string.
func String(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", bad("string", v)
}

// Slice accepts an array reply; n >= 0 also requires exactly n elements.
func Slice(v any, n int) ([]any, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, bad("array", v)
	}
	if n >= 0 && len(a) != n {
		return nil, fmt.Errorf("%w: want %d elements, got %d", ErrUnexpected, n, len(a))
	}
	return a, nil
}

// Strings accepts an array of strings. Nil elements (Lua false) become "".
func Strings(v any) ([]string, error) {
	a, err := Slice(v, -1)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(a))
	for i, e := range a {
		if e == nil {
			continue
		}
		if out[i], err = String(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Int64s accepts an array of integers.
func Int64s(v any) ([]int64, error) {
	a, err := Slice(v, -1)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(a))
	for i, e := range a {
		if out[i], err = Int64(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// StreamID parses a stream entry ID, "ms-seq" or "ms" (whose sequence
// number is 0), each part a base-10 uint64.
func StreamID(id string) (ms, seq uint64, ok bool) {
	m, s, hasSeq := strings.Cut(id, "-")
	ms, err := strconv.ParseUint(m, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if hasSeq {
		if seq, err = strconv.ParseUint(s, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return ms, seq, true
}

// StreamIDBefore reports whether stream entry ID a comes before b; an ID
// that does not parse (StreamID) is before every one that does.
func StreamIDBefore(a, b string) bool {
	am, as, aok := StreamID(a)
	bm, bs, bok := StreamID(b)
	if !aok || !bok {
		return !aok && bok
	}
	return am < bm || am == bm && as < bs
}
