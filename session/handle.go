package session

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redschema/redschema/keys"
)

// A session handle, the bearer credential a client holds, is
// "<secret>.<user>": 256 random bits from crypto/rand and the user ID,
// each in unpadded URL-safe base64. Redis never sees the secret: the
// session's ID, in its key, its index entry, List and errors, is a digest
// of it (idOf), which names the session (to list or revoke it) but
// cannot be turned back into a handle.
const (
	// secretBytes is the entropy of a handle's secret: 256 bits.
	secretBytes = 32
	// idBytes is the size of a session ID: 128 bits of a SHA-256.
	idBytes = 16
	// idLen is the length of a session ID: 22 characters of unpadded
	// URL-safe base64.
	idLen = 22
	// tokenBytes is the entropy of a refresh token: 256 bits.
	tokenBytes = 32
	// maxHandleLen bounds a presented handle (the secret, a dot, and the
	// base64 of a user ID of at most 1,024 bytes).
	maxHandleLen = 4096
)

var b64 = base64.RawURLEncoding

// b64strict decodes only the canonical encoding (unused trailing bits
// zero), so each handle has exactly one spelling.
var b64strict = base64.RawURLEncoding.Strict()

// idDomain separates session-ID digests from any other SHA-256 of the same
// bytes.
const idDomain = "redschema/session/id\x00"

// Tokens are the credentials Create returns, to hand to the client once:
// neither is stored in Redis. Printing a Tokens value (fmt, log/slog)
// shows no secret; read the fields to send them.
type Tokens struct {
	// Handle is the session's bearer credential: put it in a cookie
	// (Cookie) or an "Authorization: Bearer" header.
	Handle string
	// Refresh is the first refresh token (RotateRefresh exchanges it).
	Refresh string
}

// String hides the credentials.
func (Tokens) String() string { return "session.Tokens{Handle: [redacted], Refresh: [redacted]}" }

// GoString hides the credentials from %#v.
func (t Tokens) GoString() string { return t.String() }

// LogValue hides the credentials from log/slog.
func (Tokens) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// newHandle draws a handle for userID and returns it with the session ID
// it maps to.
func newHandle(userID string) (handle, sid string, err error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("random session secret: %w", err)
	}
	return b64.EncodeToString(b[:]) + "." + b64.EncodeToString([]byte(userID)), idOf(b[:]), nil
}

// idOf is the ID of the session whose handle holds secret: the first 128
// bits of SHA-256(idDomain || secret), in unpadded URL-safe base64. A
// plain digest is enough (no key): the secret is 256 random bits, so
// nothing short of a preimage attack on SHA-256 turns an ID back into it.
func idOf(secret []byte) string {
	h := sha256.New()
	h.Write([]byte(idDomain))
	h.Write(secret)
	return b64.EncodeToString(h.Sum(nil)[:idBytes])
}

// newRefreshToken returns a 256-bit random token and its stored form.
func newRefreshToken() (token, hash string, err error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("random refresh token: %w", err)
	}
	token = b64.EncodeToString(b[:])
	return token, hashToken(token), nil
}

// hashToken is the stored form of a refresh token: hex SHA-256. A fast
// unsalted hash is enough because tokens are 256-bit random values that
// cannot be guessed or looked up in a dictionary; it keeps a Redis dump
// from being replayable.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ParseHandle checks a handle made by Create and returns its user ID and
// the ID of its session (the digest of its secret), as Get, Authenticate,
// RotateRefresh and the other methods take them. A malformed or
// non-canonical handle is ErrInvalidToken; the error never quotes the
// handle.
func ParseHandle(h string) (userID, sessionID string, err error) {
	sec, enc, ok := strings.Cut(h, ".")
	if !ok || enc == "" || len(h) > maxHandleLen {
		return "", "", badHandle("malformed handle")
	}
	raw, err := b64strict.DecodeString(sec)
	if err != nil || len(raw) != secretBytes {
		return "", "", badHandle("malformed secret")
	}
	uid, err := b64strict.DecodeString(enc)
	if err != nil || len(uid) == 0 {
		return "", "", badHandle("malformed user ID")
	}
	return string(uid), idOf(raw), nil
}

// badHandle is ParseHandle's error: ErrInvalidToken with a reason that
// never quotes the handle.
func badHandle(why string) error {
	return pkg.Fail("parse handle", "", ErrInvalidToken, errors.New(why))
}

// validID reports whether id has the shape of a session ID.
func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	_, err := b64strict.DecodeString(id)
	return err == nil
}

// newRequestID returns a random ID for one call of an operation whose
// outcome the server records for replayWindow (see requestKey).
func newRequestID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random request ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// newRequestKey returns the request key of a fresh request ID of userID,
// for one call of op.
func newRequestKey(op string, ns keys.Namespace, userID string) (string, error) {
	rid, err := newRequestID()
	if err != nil {
		return "", pkg.Fail(op, "", nil, err)
	}
	return pkg.Key(op, requestKey, ns, userID, rid)
}
