package session

import (
	"context"
	"crypto/subtle"
	_ "embed"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed refresh_hash.lua
	refreshHashSrc string
	//go:embed rotate.lua
	rotateSrc string

	refreshHashOp = declare("verify refresh", liveLib+"\n"+refreshHashSrc, sessionKeys, call.On(call.None, ErrNotFound))
	rotateOp      = declare("rotate refresh", liveLib+"\n"+replayLib+"\n"+rotateSrc,
		[]*keys.Template{sessionKey, indexKey, requestKey}, call.On(call.None, ErrNotFound), call.Durable())
)

// maxTokenLen bounds a presented refresh token; ours are 43 bytes.
const maxTokenLen = 512

func checkToken(op, token string) error {
	if token == "" || len(token) > maxTokenLen {
		return pkg.Fail(op, "", ErrInvalidToken, nil)
	}
	return nil
}

// VerifyRefresh checks token against the live session's stored hash, in
// constant time, in one round trip. It does not rotate or slide. It
// returns ErrNotFound when the session is not live and ErrInvalidToken on
// a mismatch (including a rotated-away token: use RotateRefresh to have
// reuse revoke the session).
func (s *Store) VerifyRefresh(ctx context.Context, userID, sessionID, token string) error {
	const op = "verify refresh"
	ks, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return err
	}
	if err := checkToken(op, token); err != nil {
		return err
	}
	run, ks, args, err := s.withEvents(refreshHashOp, ks[1], userID, ks, []any{sessionID})
	if err != nil {
		return err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	if err != nil {
		return err
	}
	stored := rep.Str(0)
	if stored != "" && !isHexDigest(stored) {
		rep.Corruptf(ks[0], "%s is not a hex SHA-256", fRefreshHash)
	}
	if err := rep.Err(); err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(stored), []byte(hashToken(token))) != 1 {
		return pkg.Fail(op, ks[0], ErrInvalidToken, nil)
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
//
// The new token is drawn before the request is sent, so the same call
// resent by go-redis after a lost reply recognises its own rotation (the
// current hash is the new token's) and succeeds again: an honest rotation
// is never taken for reuse. A call that finds a reuse records that outcome
// for ReplayWindow under a request ID of its own (as Revoke does), so its
// resend reports ErrTokenReused again, not ErrNotFound.
func (s *Store) RotateRefresh(ctx context.Context, userID, sessionID, token string) (string, error) {
	const op = "rotate refresh"
	ks, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return "", err
	}
	if err := checkToken(op, token); err != nil {
		return "", err
	}
	fresh, freshHash, err := newRefreshToken()
	if err != nil {
		return "", pkg.Fail(op, "", nil, err)
	}
	rk, err := newRequestKey(op, s.opt.ns, userID)
	if err != nil {
		return "", err
	}
	run, ks, args, err := s.withEvents(rotateOp, ks[1], userID, append(ks, rk), []any{sessionID, hashToken(token), freshHash, s.opt.history, ms(ReplayWindow)})
	if err != nil {
		return "", err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		return "", err
	}
	if rep.Status == call.Conflict {
		why := rep.Str(0)
		if err := rep.Err(); err != nil {
			return "", err
		}
		if why == "reused" {
			return "", pkg.Fail(op, ks[0], ErrTokenReused, nil)
		}
		return "", pkg.Fail(op, ks[0], ErrInvalidToken, nil)
	}
	return fresh, nd
}

// isHexDigest reports whether s is a lower-case hex SHA-256.
func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
