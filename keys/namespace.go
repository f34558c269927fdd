package keys

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Namespace is the key-space configuration shared by every package client:
// a prefix put before every key, and whether hash tags are written.
//
// The zero Namespace is valid: no prefix, hash tags on.
//
// Hash tags are on by default, on a standalone server too, so that moving to
// a Redis Cluster needs no key migration. With NoHashTags set, keys leave
// the braces out ("session:index:42" instead of "session:index:{42}"), which
// makes most of them byte-identical to the reference systems' layouts (each
// system's page in docs/ says where); use it only on a standalone server,
// where multi-key scripts do not need co-location.
type Namespace struct {
	// Prefix is prepended verbatim to every key, e.g. "ha:" (the
	// home-automation backend's REDIS_KEY_PREFIX, docs/home-automation.md).
	// It must be valid UTF-8 without control bytes or '{' '}'.
	Prefix string
	// NoHashTags renders tag placeholders without braces.
	NoHashTags bool
}

// Validate reports whether the prefix can be used. Package constructors call
// it so that a bad prefix fails at start-up, not on the first request.
func (ns Namespace) Validate() error {
	if !utf8.ValidString(ns.Prefix) {
		return fmt.Errorf("%w namespace: prefix %q is not valid UTF-8", ErrInvalid, ns.Prefix)
	}
	for i := 0; i < len(ns.Prefix); i++ {
		c := ns.Prefix[i]
		if c == '{' || c == '}' || c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w namespace: prefix %q contains %q", ErrInvalid, ns.Prefix, c)
		}
	}
	return nil
}

// Sub returns a namespace whose prefix extends this one, e.g. a per-tenant
// or per-test prefix. The tag setting is kept.
func (ns Namespace) Sub(prefix string) Namespace {
	ns.Prefix += prefix
	return ns
}

// Match returns a SCAN MATCH pattern for every key under the prefix, with
// glob characters in the prefix escaped.
func (ns Namespace) Match() string { return globEscape(ns.Prefix) + "*" }

// globEscape escapes the characters that Redis glob patterns (SCAN MATCH,
// KEYS, PSUBSCRIBE) treat specially, so s matches only itself.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\^`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\', '^':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
