package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
)

// Devices lists each live session with its client details and
// timestamps, and slides none of them: index scores, hash TTLs and
// last_activity are as before the call.
func TestDevicesReadOnly(t *testing.T) {
	e, s := newStore(t, WithIdleTimeout(time.Minute), WithMaxLifetime(time.Hour))
	ctx := e.Ctx()
	a, _, err := s.Create(ctx, Info{UserID: "u1", IPAddress: "10.0.0.1", UserAgent: "Firefox", DeviceFingerprint: "laptop"})
	require.NoError(t, err)
	e.Advance(1100 * time.Millisecond)
	b, _, err := s.Create(ctx, Info{UserID: "u1", IPAddress: "10.0.0.2", UserAgent: "Safari", DeviceFingerprint: "phone"})
	require.NoError(t, err)
	gone, _ := mustCreate(t, e, s, "u1")
	_, err = s.Revoke(ctx, "u1", gone.ID)
	require.NoError(t, err)
	_, _ = mustCreate(t, e, s, "u2")

	idx := idxKey(t, e, "u1")
	before, err := e.Client.ZRangeWithScores(ctx, idx, 0, -1).Result()
	require.NoError(t, err)
	ttlA := pttl(t, e, sessKey(t, e, "u1", a.ID))
	e.Advance(1100 * time.Millisecond)

	devs, err := s.Devices(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, devs, 2, "the revoked session and other users' are not listed")
	assert.Equal(t, a.ID, devs[0].ID, "soonest expiry first")
	assert.Equal(t, Device{ID: a.ID, IPAddress: "10.0.0.1", UserAgent: "Firefox", DeviceFingerprint: "laptop",
		CreatedAt: a.CreatedAt, LastActivity: a.LastActivity, ExpiresAt: a.ExpiresAt, AbsoluteExpiry: a.AbsoluteExpiry}, devs[0])
	assert.Equal(t, b.ID, devs[1].ID)
	assert.Equal(t, "Safari", devs[1].UserAgent)
	assert.Equal(t, "phone", devs[1].DeviceFingerprint)
	assert.True(t, devs[1].ExpiresAt.Equal(b.ExpiresAt))

	after, err := e.Client.ZRangeWithScores(ctx, idx, 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, before, after, "no index score moved")
	assert.Less(t, pttl(t, e, sessKey(t, e, "u1", a.ID)), ttlA, "the hash's TTL was not refreshed")
	got, err := s.Get(ctx, "u1", a.ID)
	require.NoError(t, err)
	assert.True(t, got.LastActivity.After(a.LastActivity), "Get slides; Devices did not")

	devs, err = s.Devices(ctx, "nobody")
	require.NoError(t, err)
	assert.Empty(t, devs)
	_, err = s.Devices(ctx, "")
	require.ErrorIs(t, err, ErrInvalid)
	e.RequireTTLs(nil)
}

// A listed session whose hash holds data this package did not write is
// keys.ErrCorrupt naming the hash; a hash that is gone is left out.
func TestDevicesCorruptAndOrphans(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	a, _ := mustCreate(t, e, s, "u1")
	b, _ := mustCreate(t, e, s, "u1")
	require.NoError(t, e.Client.Del(ctx, sessKey(t, e, "u1", b.ID)).Err())
	devs, err := s.Devices(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, devs, 1)
	assert.Equal(t, a.ID, devs[0].ID)

	k := sessKey(t, e, "u1", a.ID)
	require.NoError(t, e.Client.HSet(ctx, k, fAbsoluteExp, "soon").Err())
	_, err = s.Devices(ctx, "u1")
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), k)
	require.NoError(t, e.Client.HSet(ctx, k, fAbsoluteExp, a.AbsoluteExpiry.UnixMilli(), fCreatedAt, "yesterday").Err())
	_, err = s.Devices(ctx, "u1")
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), k)
}
