package session

import (
	"context"
	_ "embed"

	"github.com/redschema/redschema/internal/call"
	"strconv"
	"time"

	"github.com/redschema/redschema/keys"
)

var (
	//go:embed list.lua
	listSrc string

	listOp = declare("list", listSrc, []*keys.Template{indexKey}, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS))
)

// List returns the live sessions of userID, soonest expiry first, in one
// round trip; the same script prunes expired entries from the index (its
// TTL is the writes' to set). It does not slide any session. The IDs can revoke a
// session (Revoke, RevokeOthers) but not authenticate it: show them to
// the user, never a handle. Devices adds each session's client details
// and timestamps, also without sliding. An index entry this package did not write (a
// member that is not a session ID, an expiry that is not a deadline it
// sets) is keys.ErrCorrupt naming the index; the entry is not quoted.
func (s *Store) List(ctx context.Context, userID string) ([]Entry, error) {
	idx, err := pkg.Key(listOp.Name(), indexKey, s.opt.ns, userID)
	if err != nil {
		return nil, err
	}
	run, ks, args, err := s.withEvents(listOp, idx, userID, []string{idx}, nil)
	if err != nil {
		return nil, err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	if err != nil {
		return nil, err
	}
	flat := rep.Strs(0)
	if len(flat)%2 != 0 {
		rep.Corruptf(idx, "odd ZRANGE WITHSCORES reply")
	}
	if err := rep.Err(); err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		score, err := strconv.ParseInt(flat[i+1], 10, 64)
		if err != nil || !validID(flat[i]) {
			// The member is not quoted: it is not a session ID, and
			// could be anything (another application's bearer token).
			rep.Corruptf(idx, "entry %d is not a session ID and its expiry", i/2+1)
			return nil, rep.Err()
		}
		out = append(out, Entry{ID: flat[i], ExpiresAt: time.UnixMilli(score)})
	}
	return out, nil
}
