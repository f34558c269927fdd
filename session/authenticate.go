package session

import (
	"context"
	_ "embed"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed authenticate.lua
	authenticateSrc string

	authenticateOp = declare("authenticate", authenticateSrc,
		[]*keys.Template{sessionKey, indexKey, userKey}, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS))
)

// Authenticate is Get and Users.Validate in one script and one round trip,
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
	const op = "authenticate"
	if users == nil {
		return nil, nil, pkg.Invalidf(op, "nil Users")
	}
	ks, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return nil, nil, err
	}
	ukey, err := users.key(op, userID)
	if err != nil {
		return nil, nil, err
	}
	if !keys.SameSlot(ks[0], ks[1], ukey) {
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
	ks = append(ks, ukey)
	run, ks, args, err := s.withEvents(authenticateOp, ks[1], userID, ks, []any{sessionID, unit.MsFloor(s.opt.idle), unit.MsFloor(users.opt.userTTL), userID})
	if err != nil {
		return nil, nil, err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	if err != nil {
		return nil, nil, err
	}
	switch rep.Status {
	case call.None:
		if what := rep.Str(0); what == "user" && rep.Err() == nil {
			return nil, nil, pkg.Fail(op, ukey, ErrNotFound, nil)
		}
		if err := rep.Err(); err != nil {
			return nil, nil, err
		}
		return nil, nil, pkg.Fail(op, ks[0], ErrNotFound, nil)
	case call.Conflict:
		return nil, nil, pkg.Fail(op, ukey, ErrBlocked, nil)
	}
	sess := decodeLive(&rep, 1, ks[0], userID, sessionID)
	usr := decodeUser(&rep, 3, ukey, userID)
	if err := rep.Err(); err != nil {
		return nil, nil, err
	}
	return sess, usr, nil
}
