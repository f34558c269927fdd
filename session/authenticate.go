package session

import (
	"context"
	"fmt"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

// Authenticate is Get and users.Validate in one script and one round trip,
// as the middleware runs them: the user record is checked and touched
// (last_seen, TTL) and, only if the user may proceed, the session is slid
// and returned with the record. A session that is not live is ErrNotFound;
// a missing user record ErrNotFound; a blocked user ErrBlocked (the
// session is then not slid). Anonymous users are returned; check
// User.CanWrite before writes.
//
// The three keys share the user_id hash tag. When they cannot share a
// slot (hash tags off), Authenticate falls back to Get then Validate: two
// round trips, not atomic, and the Get slides the session before a block
// is seen (the call still fails with ErrBlocked).
func (s *Store) Authenticate(ctx context.Context, users *Users, userID, sessionID string) (*Session, *User, error) {
	const op = "Authenticate"
	if users == nil {
		return nil, nil, invalid(op, "nil Users")
	}
	key, idx, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return nil, nil, err
	}
	ukey, err := users.key(op, userID)
	if err != nil {
		return nil, nil, err
	}
	if !keys.SameSlot(key, idx, ukey) {
		sess, err := s.Get(ctx, userID, sessionID)
		if err != nil {
			return nil, nil, err
		}
		usr, err := users.Validate(ctx, userID)
		if err != nil {
			return nil, nil, err
		}
		return sess, usr, nil
	}
	v, err := run(ctx, s.c, authenticateScript, []string{key, idx, ukey}, sessionID, ms(s.cfg.idle), ms(users.cfg.userTTL))
	if err != nil {
		return nil, nil, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if v == nil {
		return nil, nil, fmt.Errorf("session: %s %q: %w", op, key, ErrNotFound)
	}
	if st, ok := status(v); ok {
		switch st {
		case "corrupt":
			return nil, nil, keys.Corrupt(key, fmt.Errorf("unreadable %s", fAbsoluteExp))
		case "nouser":
			return nil, nil, fmt.Errorf("session: %s %q: %w", op, ukey, ErrNotFound)
		case "usercorrupt":
			return nil, nil, keys.Corrupt(ukey, fmt.Errorf("missing or unknown status"))
		case "blocked":
			return nil, nil, fmt.Errorf("session: %s %q: %w", op, ukey, ErrBlocked)
		}
		return nil, nil, fmt.Errorf("session: %s %q: %w: status %q", op, key, reply.ErrUnexpected, st)
	}
	a, err := reply.Slice(v, 4)
	if err != nil {
		return nil, nil, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	sess, err := decodeLive(op, key, userID, sessionID, a[1], a[2])
	if err != nil {
		return nil, nil, err
	}
	usr, err := decodeUser(op, ukey, userID, a[3])
	if err != nil {
		return nil, nil, err
	}
	return sess, usr, nil
}
