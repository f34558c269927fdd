package presence

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// SetAdminStatus stores an admin's availability as seed 000 does: the plain
// string "online", "away", "busy" or "offline" at admin:{admin_id}:presence
// with a 30 minute TTL, refreshed by each call (one SET ... EX, one round
// trip). Invisible is not part of seed 000's set and gives ErrInvalidStatus.
func (t *Tracker) SetAdminStatus(ctx context.Context, admin string, s Status) error {
	if !s.valid() || s == Invisible {
		return fmt.Errorf("presence: set admin status: %w %q", ErrInvalidStatus, s)
	}
	k, err := adminKey.Key(t.cfg.ns, admin)
	if err != nil {
		return fmt.Errorf("presence: set admin status: %w", err)
	}
	if err := t.c.Set(ctx, k, string(s), adminKey.TTL()).Err(); err != nil {
		return fmt.Errorf("presence: set admin status %s: %w", k, err)
	}
	return nil
}

// AdminStatus returns an admin's availability (one GET). An admin with no
// key (never set, or 30 minutes without SetAdminStatus) is Offline. A value
// outside seed 000's set gives an error matching keys.ErrCorrupt.
func (t *Tracker) AdminStatus(ctx context.Context, admin string) (Status, error) {
	k, err := adminKey.Key(t.cfg.ns, admin)
	if err != nil {
		return "", fmt.Errorf("presence: admin status: %w", err)
	}
	v, err := t.c.Get(ctx, k).Result()
	if errors.Is(err, redis.Nil) {
		return Offline, nil
	}
	if err != nil {
		return "", fmt.Errorf("presence: admin status %s: %w", k, err)
	}
	s := Status(v)
	if !s.valid() || s == Invisible {
		return "", fmt.Errorf("presence: admin status: %w", keys.Corrupt(k, fmt.Errorf("unknown status %q", v)))
	}
	return s, nil
}
