package session

import (
	"context"
	_ "embed"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed revoke.lua
	revokeSrc string
	//go:embed revoke_all.lua
	revokeAllSrc string

	revokeOp = declare("revoke", revokeSrc,
		[]*keys.Template{sessionKey, indexKey, requestKey}, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.Durable())
	revokeAllOp = declare("revoke all", revokeAllSrc,
		[]*keys.Template{indexKey, requestKey}, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.Durable())
	revokeOthersOp = declare("revoke others", revokeAllSrc,
		[]*keys.Template{indexKey, requestKey}, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.Durable())
)

// Revoke ends one session at once: the hash and its index entry are
// deleted in one script. sessionID is the session's ID (Session.ID,
// Entry.ID, or the second result of ParseHandle). It reports whether a
// live session ended; revoking a missing session is not an error. The same
// call resent by go-redis after a lost reply reports its first outcome
// (within the replay window, 3 minutes).
func (s *Store) Revoke(ctx context.Context, userID, sessionID string) (bool, error) {
	const op = "revoke"
	ks, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return false, err
	}
	rk, err := newRequestKey(op, s.opt.ns, userID)
	if err != nil {
		return false, err
	}
	run, ks, args, err := s.withEvents(revokeOp, ks[1], userID, append(ks, rk), []any{sessionID, unit.MsFloor(replayWindow)})
	if err != nil {
		return false, err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		return false, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return false, err
	}
	return n == 1, nd
}

// RevokeAll ends every session of userID at once ("log out everywhere")
// and returns how many were live. It is one script on the index alone:
// every operation checks the index, so the sessions are dead when it
// returns; their hashes are deleted by the next call that names them or
// expire with their idle TTL, and are never readable again. The same call
// resent by go-redis after a lost reply reports its first count.
func (s *Store) RevokeAll(ctx context.Context, userID string) (int, error) {
	return s.revokeAll(ctx, revokeAllOp, userID, "")
}

// RevokeOthers ends every session of userID except keep (a session ID),
// like RevokeAll. keep stays as it is (it is not slid); if keep is not
// live, all sessions end.
func (s *Store) RevokeOthers(ctx context.Context, userID, keep string) (int, error) {
	if keep == "" {
		return 0, pkg.Invalidf(revokeOthersOp.Name(), "empty session ID to keep")
	}
	return s.revokeAll(ctx, revokeOthersOp, userID, keep)
}

func (s *Store) revokeAll(ctx context.Context, op *call.Op, userID, keep string) (int, error) {
	idx, err := pkg.Key(op.Name(), indexKey, s.opt.ns, userID)
	if err != nil {
		return 0, err
	}
	rk, err := newRequestKey(op.Name(), s.opt.ns, userID)
	if err != nil {
		return 0, err
	}
	run, ks, args, err := s.withEvents(op, idx, userID, []string{idx, rk}, []any{keep, unit.MsFloor(replayWindow)})
	if err != nil {
		return 0, err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		return 0, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return 0, err
	}
	return int(n), nd
}
