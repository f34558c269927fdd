package session

import (
	"context"
	_ "embed"
	"errors"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed renew.lua
	renewSrc string

	renewOp = declare("renew", renewSrc, []*keys.Template{sessionKey, indexKey, sessionKey},
		call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.On(call.None, ErrNotFound), call.Durable())
)

// Renew moves the live session sessionID of userID to a new ID and ends
// the old one, in one script and round trip, and returns the renewed
// session with its new Tokens: a new handle and a new refresh token. Call
// it when a user logs in on an existing session or gains privileges
// (session fixation: a handle someone else planted or saw before the
// change stops working).
//
// The hash is renamed with everything in it (fields, caller extras,
// created_at and the absolute expiry, so the lifetime cap does not move),
// its index entry is replaced, and the session is slid as by Get. The
// old refresh token joins the rotated-away history: presenting it later
// is reuse, which revokes the renewed session (ErrTokenReused from
// RotateRefresh). The script is atomic, so there is no moment when both
// IDs work, nor one when neither does: a Get of the old ID that starts
// after Renew returned is ErrNotFound.
//
// A session that is not live is ErrNotFound. The new ID and token are
// drawn before the request is sent, so a request that go-redis resends
// after a lost reply finds its own renewed session and reports it. When
// the call fails on the wire anyway, the renewed session, if the server
// made it, has no holder: Renew revokes it in the background, best
// effort, and the user must log in again. With WithDurability, a renewal
// acknowledged by fewer replicas than asked is returned with its Tokens
// and an error matching ErrNotDurable.
func (s *Store) Renew(ctx context.Context, userID, sessionID string) (*Session, Tokens, error) {
	const op = "renew"
	ks, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return nil, Tokens{}, err
	}
	handle, nsid, err := newHandle(userID)
	if err != nil {
		return nil, Tokens{}, pkg.Fail(op, "", nil, err)
	}
	refresh, refreshHash, err := newRefreshToken()
	if err != nil {
		return nil, Tokens{}, pkg.Fail(op, "", nil, err)
	}
	nk, err := pkg.Key(op, sessionKey, s.opt.ns, userID, nsid)
	if err != nil {
		return nil, Tokens{}, err
	}
	run, ks, args, err := s.withEvents(renewOp, ks[1], userID, append(ks, nk), []any{sessionID, nsid, s.idleArg, refreshHash, s.opt.history, userID})
	if err != nil {
		return nil, Tokens{}, err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		if !errors.Is(err, keys.ErrCorrupt) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNotFound) {
			s.abandon(ctx, userID, nsid)
		}
		return nil, Tokens{}, err
	}
	sess := decodeLive(&rep, 1, nk, userID, nsid)
	if err := rep.Err(); err != nil {
		return nil, Tokens{}, err
	}
	return sess, Tokens{Handle: handle, Refresh: refresh}, nd
}
