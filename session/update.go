package session

import (
	"context"
	_ "embed"
	"sort"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

var (
	//go:embed update.lua
	updateSrc string

	updateOp = declare("update", updateSrc, sessionKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.Needs(call.Batched), call.On(call.None, ErrNotFound))
)

// Changes lists the fields Update writes.
type Changes struct {
	// Set writes fields: email, ip_address, user_agent,
	// device_fingerprint, or caller-defined extras.
	Set map[string]string
	// Delete removes caller-defined extra fields. Deletes apply before
	// sets, so a name in both ends up set.
	Delete []string
}

// Update applies ch to a live session and slides it like Get, in one
// script and round trip. It never writes to a missing, expired or revoked
// session (ErrNotFound): no HSET brings a deleted hash back. user_id,
// created_at, last_activity, absolute_expiry and the refresh-token fields
// cannot be set. Changes that would leave the session with more than
// 32 caller-defined fields are ErrInvalid, checked in the
// same script before anything is written.
func (s *Store) Update(ctx context.Context, userID, sessionID string, ch Changes) error {
	const op = "update"
	ks, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return err
	}
	if len(ch.Set)+len(ch.Delete) > 2*maxExtraFields {
		return pkg.Invalidf(op, "%d changes, more than %d", len(ch.Set)+len(ch.Delete), 2*maxExtraFields)
	}
	for _, name := range ch.Delete {
		if err := checkExtraName(op, name); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(ch.Set))
	for name, v := range ch.Set {
		if !updatable[name] {
			if err := checkExtraName(op, name); err != nil {
				return err
			}
		}
		if err := checkValue(op, name, v); err != nil {
			return err
		}
		names = append(names, name)
	}
	sort.Strings(names)
	args := make([]any, 0, 4+len(ch.Delete)+2*len(names))
	args = append(args, sessionID, unit.MsFloor(s.opt.idle), maxExtraFields, len(ch.Delete))
	for _, name := range ch.Delete {
		args = append(args, name)
	}
	for _, name := range names {
		args = append(args, name, ch.Set[name])
	}
	run, ks, args, err := s.withEvents(updateOp, ks[1], userID, ks, args)
	if err != nil {
		return err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	if err != nil {
		return err
	}
	rep.Int(0)
	return rep.Err()
}
