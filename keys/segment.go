package keys

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxSegmentLen is the longest value, in bytes before encoding, accepted for
// one placeholder. Longer identifiers should be hashed by the caller.
const maxSegmentLen = 1024

const hexDigits = "0123456789ABCDEF"

// escaped reports whether byte b is percent-encoded inside a segment.
//
// Everything the reference systems put in IDs (letters, digits, "-_.@/",
// space, and any non-ASCII UTF-8) passes through unchanged. Escaped are: the
// separator ':', the escape '%' itself, the hash-tag braces '{' '}', the
// SCAN glob characters '*?[]\', and ASCII control bytes.
func escaped(b byte) bool { return escapedBytes[b] }

// escapedBytes is escaped as a table (a lookup costs less than the
// comparisons on every byte of every key built).
var escapedBytes = [256]bool{
	0x00: true, 0x01: true, 0x02: true, 0x03: true, 0x04: true, 0x05: true, 0x06: true, 0x07: true,
	0x08: true, 0x09: true, 0x0a: true, 0x0b: true, 0x0c: true, 0x0d: true, 0x0e: true, 0x0f: true,
	0x10: true, 0x11: true, 0x12: true, 0x13: true, 0x14: true, 0x15: true, 0x16: true, 0x17: true,
	0x18: true, 0x19: true, 0x1a: true, 0x1b: true, 0x1c: true, 0x1d: true, 0x1e: true, 0x1f: true,
	':': true, '%': true, '{': true, '}': true, '*': true, '?': true, '[': true, ']': true, '\\': true,
	0x7f: true,
}

// escape returns the encoded form of one segment value. escape is injective:
// different values give different results, and the result never contains
// ':', '{', '}' or a glob character. It does not validate; see Template.Key.
func escape(v string) string {
	n := 0
	for i := 0; i < len(v); i++ {
		if escaped(v[i]) {
			n++
		}
	}
	if n == 0 {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 2*n)
	appendEscaped(&b, v)
	return b.String()
}

func appendEscaped(b *strings.Builder, v string) {
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !escaped(c) {
			continue
		}
		b.WriteString(v[start:i])
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
		start = i + 1
	}
	b.WriteString(v[start:])
}

func escapedLen(v string) int {
	n := len(v)
	for i := 0; i < len(v); i++ {
		if escaped(v[i]) {
			n += 2
		}
	}
	return n
}

// unescape reverses escape. It fails on a malformed escape, on an escape of a
// byte escape would not have escaped, or on a raw byte escape would have
// escaped, so that every key has exactly one decoding.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		for i := 0; i < len(s); i++ {
			if escaped(s[i]) {
				return "", errBadEscape(s)
			}
		}
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if escaped(c) {
				return "", errBadEscape(s)
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", errBadEscape(s)
		}
		hi, lo := unhex(s[i+1]), unhex(s[i+2])
		if hi < 0 || lo < 0 {
			return "", errBadEscape(s)
		}
		d := byte(hi<<4 | lo)
		if !escaped(d) {
			return "", errBadEscape(s)
		}
		b.WriteByte(d)
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

type escapeError struct{ s string }

func (e *escapeError) Error() string { return "keys: bad escape in segment " + strconv.Quote(e.s) }
func (e *escapeError) Unwrap() error { return errNoMatch }

func errBadEscape(s string) error { return &escapeError{s} }

// checkSegment returns why v cannot be a segment value, or "".
func checkSegment(v string) string {
	switch {
	case v == "":
		return "empty"
	case len(v) > maxSegmentLen:
		return "longer than " + strconv.Itoa(maxSegmentLen) + " bytes"
	case !utf8.ValidString(v):
		return "not valid UTF-8"
	}
	return ""
}
