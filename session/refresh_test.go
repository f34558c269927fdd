package session

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefreshRotation(t *testing.T) {
	e, s := newStore(t, WithRefreshHistory(2))
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
	assert.Empty(t, e.Keys())
}

func TestRefreshReuseOfFirstToken(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, t0 := mustCreate(t, e, s, "u1")
	other, _ := mustCreate(t, e, s, "u1")
	_, err := s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.NoError(t, err)
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, t0)
	require.ErrorIs(t, err, ErrTokenReused)
	_, err = s.Get(ctx, "u1", other.ID)
	require.NoError(t, err, "only the compromised session is revoked")
}

// TestRawTokenNeverStored scans every key and value under the namespace
// for the refresh tokens ever issued.
func TestRawTokenNeverStored(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	var tokens []string
	for i := 0; i < 3; i++ {
		sess, tok := mustCreate(t, e, s, "u1")
		tokens = append(tokens, tok)
		for j := 0; j < 3; j++ {
			next, err := s.RotateRefresh(ctx, "u1", sess.ID, tok)
			require.NoError(t, err)
			tokens = append(tokens, next)
			tok = next
		}
	}
	_, err := s.RevokeToken(ctx, "jti-1", time.Now().Add(time.Hour))
	require.NoError(t, err)
	var dump strings.Builder
	for _, k := range e.Keys() {
		dump.WriteString(k + "\n")
		typ, err := e.Client.Type(ctx, k).Result()
		require.NoError(t, err)
		switch typ {
		case "hash":
			m, err := e.Client.HGetAll(ctx, k).Result()
			require.NoError(t, err)
			for f, v := range m {
				dump.WriteString(f + "=" + v + "\n")
			}
		case "zset":
			m, err := e.Client.ZRange(ctx, k, 0, -1).Result()
			require.NoError(t, err)
			dump.WriteString(strings.Join(m, "\n"))
		case "string":
			v, err := e.Client.Get(ctx, k).Result()
			require.NoError(t, err)
			dump.WriteString(v + "\n")
		default:
			t.Fatalf("unexpected type %s at %s", typ, k)
		}
	}
	require.NotEmpty(t, dump.String())
	for _, tok := range tokens {
		require.Len(t, tok, 43)
		assert.NotContains(t, dump.String(), tok)
		assert.Contains(t, dump.String(), hashToken(tok)[:16], "the hash is what is kept (current or history)")
	}
}
