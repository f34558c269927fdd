package session

import (
	"context"
	"crypto/subtle"
	"fmt"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

// maxTokenLen bounds a presented refresh token; ours are 43 bytes.
const maxTokenLen = 512

func checkToken(op, token string) error {
	if token == "" || len(token) > maxTokenLen {
		return fmt.Errorf("session: %s: %w", op, ErrInvalidToken)
	}
	return nil
}

// VerifyRefresh checks token against the live session's stored hash, in
// constant time, in one round trip. It does not rotate or slide. It
// returns ErrNotFound when the session is not live and ErrInvalidToken on
// a mismatch (including a rotated-away token: use RotateRefresh to have
// reuse revoke the session).
func (s *Store) VerifyRefresh(ctx context.Context, userID, sessionID, token string) error {
	const op = "VerifyRefresh"
	key, idx, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return err
	}
	if err := checkToken(op, token); err != nil {
		return err
	}
	v, err := run(ctx, s.c, refreshHashScript, []string{key, idx}, sessionID)
	if err != nil {
		return fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if v == nil {
		return fmt.Errorf("session: %s %q: %w", op, key, ErrNotFound)
	}
	if st, ok := status(v); ok && st == "corrupt" {
		return keys.Corrupt(key, fmt.Errorf("unreadable %s", fAbsoluteExp))
	}
	stored, err := reply.String(v)
	if err != nil {
		return fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if subtle.ConstantTimeCompare([]byte(stored), []byte(hashToken(token))) != 1 {
		return fmt.Errorf("session: %s %q: %w", op, key, ErrInvalidToken)
	}
	return nil
}

// RotateRefresh exchanges the session's current refresh token for a new
// one, in one script and round trip, and returns the new token. The old
// token's hash joins a bounded history (WithRefreshHistory); presenting a
// token from that history again is treated as theft: the session is
// revoked and ErrTokenReused returned. Any other mismatch is
// ErrInvalidToken and changes nothing; a session that is not live is
// ErrNotFound. Hashes are compared in constant time inside the script.
func (s *Store) RotateRefresh(ctx context.Context, userID, sessionID, token string) (string, error) {
	const op = "RotateRefresh"
	key, idx, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return "", err
	}
	if err := checkToken(op, token); err != nil {
		return "", err
	}
	fresh, freshHash, err := newRefreshToken()
	if err != nil {
		return "", fmt.Errorf("session: %s: %w", op, err)
	}
	v, err := run(ctx, s.c, rotateScript, []string{key, idx}, sessionID, hashToken(token), freshHash, s.cfg.history)
	if err != nil {
		return "", fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if v == nil {
		return "", fmt.Errorf("session: %s %q: %w", op, key, ErrNotFound)
	}
	if st, ok := status(v); ok && st == "corrupt" {
		return "", keys.Corrupt(key, fmt.Errorf("unreadable %s", fAbsoluteExp))
	}
	st, err := reply.String(v)
	if err != nil {
		return "", fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	switch st {
	case "ok":
		return fresh, nil
	case "reused":
		return "", fmt.Errorf("session: %s %q: %w", op, key, ErrTokenReused)
	case "invalid":
		return "", fmt.Errorf("session: %s %q: %w", op, key, ErrInvalidToken)
	}
	return "", fmt.Errorf("session: %s %q: %w: status %q", op, key, reply.ErrUnexpected, st)
}
