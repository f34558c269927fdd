package session

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// IDBytes is the entropy of a session ID: 16 bytes (128 bits) from
// crypto/rand, written as 22 characters of unpadded URL-safe base64.
const IDBytes = 16

// tokenBytes is the entropy of a refresh token: 256 bits.
const tokenBytes = 32

var b64 = base64.RawURLEncoding

// b64strict decodes only the canonical encoding (unused trailing bits
// zero), so each handle has exactly one spelling.
var b64strict = base64.RawURLEncoding.Strict()

// NewID returns a fresh session ID: IDBytes random bytes from crypto/rand
// in unpadded URL-safe base64 (A-Z a-z 0-9 - _), which keys store
// unescaped.
func NewID() (string, error) {
	var b [IDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random session ID: %w", err)
	}
	return b64.EncodeToString(b[:]), nil
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

// EncodeHandle returns the client-side handle of a session: the session
// ID, a '.', and the user ID in unpadded URL-safe base64. It is safe in a
// cookie value and an Authorization header. It is not a secret beyond the
// session ID it carries.
func EncodeHandle(userID, sessionID string) string {
	return sessionID + "." + b64.EncodeToString([]byte(userID))
}

// ParseHandle splits a handle made by EncodeHandle. A malformed or
// non-canonical handle is ErrInvalidToken.
func ParseHandle(h string) (userID, sessionID string, err error) {
	sid, enc, ok := strings.Cut(h, ".")
	if !ok || sid == "" || enc == "" || len(h) > 2*MaxFieldLen {
		return "", "", fmt.Errorf("session: ParseHandle: %w: malformed handle", ErrInvalidToken)
	}
	if _, err := b64strict.DecodeString(sid); err != nil || len(sid) != b64.EncodedLen(IDBytes) {
		return "", "", fmt.Errorf("session: ParseHandle: %w: malformed session ID", ErrInvalidToken)
	}
	uid, err := b64strict.DecodeString(enc)
	if err != nil || len(uid) == 0 {
		return "", "", fmt.Errorf("session: ParseHandle: %w: malformed user ID", ErrInvalidToken)
	}
	return string(uid), sid, nil
}
