package session

import (
	"context"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/reply"
)

// RevokeToken blacklists the JWT whose ID is jti until expiresAt, its own
// expiry (seed 001: value "1", TTL = the token's remaining validity). One
// script compares expiresAt with the server clock: a token that has
// already expired is not written. It reports whether an entry was written.
// A zero expiresAt is ErrInvalidInput.
func (s *Store) RevokeToken(ctx context.Context, jti string, expiresAt time.Time) (bool, error) {
	const op = "RevokeToken"
	key, err := blacklistKey.Key(s.cfg.ns, jti)
	if err != nil {
		return false, fmt.Errorf("session: %s: %w: %w", op, ErrInvalidInput, err)
	}
	if expiresAt.IsZero() || expiresAt.UnixMilli() <= 0 {
		return false, invalid(op, "zero expiry")
	}
	v, err := run(ctx, s.c, blacklistScript, []string{key}, expiresAt.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	n, err := reply.Int64(v)
	if err != nil {
		return false, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	return n == 1, nil
}

// IsRevoked reports whether the JWT jti is blacklisted. One EXISTS.
func (s *Store) IsRevoked(ctx context.Context, jti string) (bool, error) {
	key, err := blacklistKey.Key(s.cfg.ns, jti)
	if err != nil {
		return false, fmt.Errorf("session: IsRevoked: %w: %w", ErrInvalidInput, err)
	}
	n, err := s.c.Exists(ctx, key).Result()
	if err != nil {
		return false, fmt.Errorf("session: IsRevoked %q: %w", key, err)
	}
	return n == 1, nil
}
