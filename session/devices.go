package session

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/redschema/redschema/internal/call"
)

var (
	//go:embed devices.lua
	devicesSrc string

	devicesOp = pkg.Declare("devices", devicesSrc, sessionKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.On(call.None, ErrNotFound))
)

// Device is one live session of a user as a device list shows it ("where
// you are signed in"). It holds no credential: ID can revoke the session
// (Revoke, RevokeOthers) but never authenticate it.
type Device struct {
	ID                string
	IPAddress         string
	UserAgent         string
	DeviceFingerprint string
	// CreatedAt and LastActivity have whole-second precision.
	CreatedAt    time.Time
	LastActivity time.Time
	// ExpiresAt is the idle deadline (capped by AbsoluteExpiry);
	// AbsoluteExpiry is the lifetime cap.
	ExpiresAt      time.Time
	AbsoluteExpiry time.Time
}

// Devices returns the live sessions of userID with their client details
// and timestamps, soonest expiry first, for a "your devices" page. It is
// read-only on the sessions: no session is slid, last_activity and every
// TTL stay as they are (only the index is pruned, as List does).
//
// It takes two round trips, the one exception besides Authenticate
// without hash tags: List, then one pipeline of read-only scripts, one per
// listed session (no script builds a key, so the hashes are read by name
// from Go). A session that ends between the two is left out. Corrupt data
// is keys.ErrCorrupt naming that key.
func (s *Store) Devices(ctx context.Context, userID string) ([]Device, error) {
	const op = "devices"
	list, err := s.List(ctx, userID)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	calls := make([]call.Call, len(list))
	for i, en := range list {
		ks, err := s.keyPair(op, userID, en.ID)
		if err != nil {
			return nil, err
		}
		calls[i] = call.Call{Op: devicesOp, Keys: ks, Args: []any{en.ID}}
	}
	reps, errs := s.run.RunMany(ctx, calls)
	out := make([]Device, 0, len(list))
	for i, en := range list {
		if errors.Is(errs[i], ErrNotFound) {
			continue
		}
		if errs[i] != nil {
			return nil, errs[i]
		}
		sess := decodeFields(&reps[i], calls[i].Keys[0], userID, en.ID)
		if err := reps[i].Err(); err != nil {
			return nil, err
		}
		out = append(out, Device{
			ID: en.ID, IPAddress: sess.IPAddress, UserAgent: sess.UserAgent, DeviceFingerprint: sess.DeviceFingerprint,
			CreatedAt: sess.CreatedAt, LastActivity: sess.LastActivity, ExpiresAt: sess.ExpiresAt, AbsoluteExpiry: sess.AbsoluteExpiry,
		})
	}
	return out, nil
}
