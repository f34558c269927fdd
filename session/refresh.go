package session

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed refresh_hash.lua
	refreshHashSrc string
	//go:embed rotate.lua
	rotateSrc string

	refreshHashOp = declare("verify refresh", refreshHashSrc, sessionKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.On(call.None, ErrNotFound))
	rotateOp      = declare("rotate refresh", rotateSrc,
		[]*keys.Template{sessionKey, indexKey, requestKey, rotationKey}, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.On(call.None, ErrNotFound), call.Durable())
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
// A retry is not theft. The new token is drawn before the request is
// sent, so the same call resent by go-redis after a lost reply recognises
// its own rotation (the current hash is the new token's) and succeeds
// again. A client that got an error instead (go-redis's retries ran out)
// may call again with the same old token within WithRotationGrace
// (3 minutes by default) of the rotation: while the new token has not
// been rotated in turn, it gets that same new token back, and nothing
// changes. For that the script keeps, at the session's rotation key for
// the grace, the new token sealed (AES-256-GCM) under a key derived from
// the old token, which Redis never holds: only the old token opens it.
// A call that finds a reuse records that outcome for the replay window (3 minutes) under a
// request ID of its own (as Revoke does), so its resend reports
// ErrTokenReused again, not ErrNotFound.
func (s *Store) RotateRefresh(ctx context.Context, userID, sessionID, token string) (string, error) {
	const op = "rotate refresh"
	ks, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return "", err
	}
	if err := checkToken(op, token); err != nil {
		return "", err
	}
	rot, err := pkg.Key(op, rotationKey, s.opt.ns, userID, sessionID)
	if err != nil {
		return "", err
	}
	fresh, freshHash, err := newRefreshToken()
	if err != nil {
		return "", pkg.Fail(op, "", nil, err)
	}
	var sealed string
	if s.opt.grace > 0 {
		if sealed, err = sealRotation(token, sessionID, fresh); err != nil {
			return "", pkg.Fail(op, "", nil, err)
		}
	}
	rk, err := newRequestKey(op, s.opt.ns, userID)
	if err != nil {
		return "", err
	}
	run, ks, args, err := s.withEvents(rotateOp, ks[1], userID, append(ks, rk, rot),
		[]any{sessionID, hashToken(token), freshHash, s.opt.history, unit.MsFloor(replayWindow), sealed, unit.MsFloor(s.opt.grace)})
	if err != nil {
		return "", err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		return "", err
	}
	if rep.Status == call.Conflict {
		return "", pkg.Fail(op, ks[0], ErrInvalidToken, nil)
	}
	if rep.Len() > 1 && rep.Str(1) == "reused" { // the session revoked: a write
		if err := rep.Err(); err != nil {
			return "", err
		}
		return "", errors.Join(pkg.Fail(op, ks[0], ErrTokenReused, nil), nd)
	}
	if rep.Len() > 0 { // a retry within the grace: the last rotation's token
		box := rep.Str(0)
		if err := rep.Err(); err != nil {
			return "", err
		}
		again, err := openRotation(token, sessionID, box)
		if err != nil {
			rep.Corruptf(rot, "sealed token: %v", err)
			return "", rep.Err()
		}
		return again, nd
	}
	return fresh, nd
}

// rotationLabel separates the key that seals a rotation's new token from
// any other use of the old token.
const rotationLabel = "redschema/session/rotation-grace/v1"

// rotationAEAD is AES-256-GCM under HMAC-SHA256(old token, label): a key
// only the holder of the old token can derive (Redis holds its SHA-256,
// which gives no HMAC under it).
func rotationAEAD(old string) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, []byte(old))
	m.Write([]byte(rotationLabel))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealRotation seals the new token under the old one, bound to the
// session (the additional data), as hex: a random nonce, then the
// ciphertext and tag.
func sealRotation(old, sessionID, fresh string) (string, error) {
	aead, err := rotationAEAD(old)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(fresh)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("random nonce: %w", err)
	}
	return hex.EncodeToString(aead.Seal(nonce, nonce, []byte(fresh), []byte(sessionID))), nil
}

// openRotation opens what sealRotation made with the old token, and
// checks that it holds a refresh token of ours.
func openRotation(old, sessionID, box string) (string, error) {
	raw, err := hex.DecodeString(box)
	if err != nil {
		return "", errors.New("not hex")
	}
	aead, err := rotationAEAD(old)
	if err != nil {
		return "", err
	}
	if len(raw) < aead.NonceSize()+aead.Overhead() {
		return "", errors.New("too short")
	}
	pt, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(sessionID))
	if err != nil {
		return "", errors.New("does not open with the presented token")
	}
	if b, err := b64strict.DecodeString(string(pt)); err != nil || len(b) != tokenBytes {
		return "", errors.New("not a refresh token")
	}
	return string(pt), nil
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
