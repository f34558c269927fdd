package session

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefreshRotation(t *testing.T) {
	e, s := newStore(t, WithRefreshHistory(2), WithRotationGrace(0))
	ctx := e.Ctx()
	sess, t0 := mustCreate(t, e, s, "u1")
	require.NoError(t, s.VerifyRefresh(ctx, "u1", sess.ID, t0))
	require.ErrorIs(t, s.VerifyRefresh(ctx, "u1", sess.ID, t0+"x"), ErrInvalidToken)
	require.ErrorIs(t, s.VerifyRefresh(ctx, "u1", sess.ID, ""), ErrInvalidToken)
	require.ErrorIs(t, s.VerifyRefresh(ctx, "u1", "missing", t0), ErrNotFound)

	t1, err := s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.NoError(t, err)
	require.NotEqual(t, t0, t1)
	require.ErrorIs(t, s.VerifyRefresh(ctx, "u1", sess.ID, t0), ErrInvalidToken)
	require.NoError(t, s.VerifyRefresh(ctx, "u1", sess.ID, t1))

	_, err = s.RotateRefresh(ctx, "u1", sess.ID, "not-a-token")
	require.ErrorIs(t, err, ErrInvalidToken, "a wrong token changes nothing")
	t2, err := s.RotateRefresh(ctx, "u1", sess.ID, t1)
	require.NoError(t, err)
	t3, err := s.RotateRefresh(ctx, "u1", sess.ID, t2)
	require.NoError(t, err)
	raw, err := e.Client.HGet(ctx, sessKey(t, e, "u1", sess.ID), fRefreshUsed).Result()
	require.NoError(t, err)
	assert.Len(t, strings.Fields(raw), 2, "history bounded")

	_, err = s.RotateRefresh(ctx, "u1", sess.ID, t2) // t2 is in the history: theft
	require.ErrorIs(t, err, ErrTokenReused)
	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound, "reuse revoked the session")
	require.ErrorIs(t, s.VerifyRefresh(ctx, "u1", sess.ID, t3), ErrNotFound)
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, t3)
	require.ErrorIs(t, err, ErrNotFound)
	assert.Empty(t, dataKeys(t, e))
}

func TestRefreshReuseOfFirstToken(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, t0 := mustCreate(t, e, s, "u1")
	other, _ := mustCreate(t, e, s, "u1")
	t1, err := s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.NoError(t, err)
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, t1)
	require.NoError(t, err)
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, t0) // two rotations old
	require.ErrorIs(t, err, ErrTokenReused)
	_, err = s.Get(ctx, "u1", other.ID)
	require.NoError(t, err, "only the compromised session is revoked")
}
