package session

import (
	"context"
	_ "embed"
	"time"

	"github.com/redschema/redschema/internal/call"
)

var (
	//go:embed get.lua
	getSrc string

	// Get may share pipelines: a resent Get slides the session again, as a
	// second Get would.
	getOp = declare("get", getSrc, sessionKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.On(call.None, ErrNotFound), call.Shared())
)

// Get returns a live session and, in the same script and round trip,
// slides it: last_activity becomes the server time and the idle deadline
// moves to now + idle timeout, never past the absolute expiry. A missing,
// expired, evicted or revoked session is ErrNotFound, and any leftovers of
// it are deleted; it is never written back.
//
// sessionID is the session's ID: the second result of ParseHandle on the
// handle a client presented (as Middleware does), or Session.ID. Get
// trusts it: never let a client authenticate with an ID it sends (a
// listed Entry.ID, say) instead of a handle.
func (s *Store) Get(ctx context.Context, userID, sessionID string) (*Session, error) {
	ks, err := s.keyPair("get", userID, sessionID)
	if err != nil {
		return nil, err
	}
	op, ks, args, err := s.withEvents(getOp, ks[1], userID, ks, []any{sessionID, s.idleArg, userID})
	if err != nil {
		return nil, err
	}
	rep, err := s.run.Run(ctx, op, ks, args...)
	if err != nil {
		return nil, err
	}
	var sess *Session
	if mode, _ := rep.Raw(2).(string); mode == "fields" {
		sess = decodeFlatFields(&rep, ks[0], userID, sessionID)
	} else {
		sess = decodeLive(&rep, 1, ks[0], userID, sessionID)
	}
	return sess, rep.Err()
}

// getFields are the fields get.lua returns by position when the session
// holds no caller extras.
var getFields = [...]string{fUserID, fEmail, fCreatedAt, fLastActivity, fIPAddress, fUserAgent, fDevice, fAbsoluteExp, fIdleTimeout}

// decodeFields builds the Session from a reply with the expiry at payload
// element 1 and the values of getFields as a list at element 2 (as
// devices.lua returns them), recording corruption in rep.
func decodeFields(rep *call.Reply, key, userID, sessionID string) *Session {
	exp := rep.Int(1)
	vals := rep.Strs(2)
	if rep.Err() != nil {
		return nil
	}
	return fieldsSession(rep, key, userID, sessionID, exp, vals)
}

// decodeFlatFields builds the Session from get.lua's reply: the expiry at
// payload element 1, then "fields" and the values of getFields.
func decodeFlatFields(rep *call.Reply, key, userID, sessionID string) *Session {
	exp := rep.Int(1)
	var vals [len(getFields)]string
	n := rep.Len() - 3
	for i := 0; i < n && i < len(vals); i++ {
		vals[i], _ = rep.OptStr(3 + i)
	}
	if rep.Err() != nil {
		return nil
	}
	if n != len(getFields) {
		rep.Corruptf(key, "get returned %d fields, want %d", n, len(getFields))
		return nil
	}
	return fieldsSession(rep, key, userID, sessionID, exp, vals[:])
}

// fieldsSession builds the Session from the values of getFields ("" for
// a missing one), recording corruption in rep.
func fieldsSession(rep *call.Reply, key, userID, sessionID string, exp int64, vals []string) *Session {
	if len(vals) != len(getFields) {
		rep.Corruptf(key, "get returned %d fields, want %d", len(vals), len(getFields))
		return nil
	}
	flat := make([]string, 0, 2*len(getFields))
	for i, f := range getFields {
		if f == fIdleTimeout && vals[i] == "" {
			continue // the session has no idle timeout of its own
		}
		flat = append(flat, f, vals[i])
	}
	sess, err := parseSession(userID, sessionID, flat)
	if err != nil {
		rep.Corruptf(key, "%v", err)
		return nil
	}
	sess.ExpiresAt = time.UnixMilli(exp)
	return sess
}
