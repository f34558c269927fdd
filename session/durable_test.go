package session

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// The test servers have no replicas, so every durable write is done and
// reported with ErrNotDurable, its result returned with it. What writes
// nothing keeps its own error.
func TestDurabilityWithoutReplicas(t *testing.T) {
	e, s := newStore(t, WithDurability(1, 20*time.Millisecond))
	ctx := e.Ctx()

	sess, toks, err := s.Create(ctx, Info{UserID: "u1"})
	require.ErrorIs(t, err, ErrNotDurable)
	require.NotNil(t, sess, "the session comes with ErrNotDurable")
	require.NotEmpty(t, toks.Handle)
	_, err = s.Get(ctx, "u1", sess.ID)
	require.NoError(t, err, "created; a read does not wait")

	fresh, err := s.RotateRefresh(ctx, "u1", sess.ID, toks.Refresh)
	require.ErrorIs(t, err, ErrNotDurable)
	require.NotEmpty(t, fresh)
	require.NoError(t, s.VerifyRefresh(ctx, "u1", sess.ID, fresh), "rotated")
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, "not-the-token")
	assert.ErrorIs(t, err, ErrInvalidToken)
	assert.NotErrorIs(t, err, ErrNotDurable)

	renewed, rtoks, err := s.Renew(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotDurable)
	require.NotNil(t, renewed, "the renewed session comes with ErrNotDurable")
	require.NotEmpty(t, rtoks.Handle)
	_, err = s.Get(ctx, "u1", renewed.ID)
	require.NoError(t, err, "renewed")
	_, _, err = s.Renew(ctx, "u1", sess.ID)
	assert.ErrorIs(t, err, ErrNotFound, "the old ID is dead")
	assert.NotErrorIs(t, err, ErrNotDurable)
	sess = renewed

	ended, err := s.Revoke(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotDurable)
	assert.True(t, ended)
	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound, "revoked")

	_, _, err = s.Create(ctx, Info{UserID: "u1"})
	require.ErrorIs(t, err, ErrNotDurable)
	n, err := s.RevokeAll(ctx, "u1")
	require.ErrorIs(t, err, ErrNotDurable)
	assert.Equal(t, 1, n)

	revoked, err := s.RevokeToken(ctx, "jti-1", time.Now().Add(time.Hour))
	require.ErrorIs(t, err, ErrNotDurable)
	assert.True(t, revoked)
	revoked, err = s.IsRevoked(ctx, "jti-1")
	require.NoError(t, err)
	assert.True(t, revoked)

	u, err := NewUsers(e.Client, WithNamespace(e.NS), WithDurability(1, 20*time.Millisecond))
	require.NoError(t, err)
	require.ErrorIs(t, u.Block(ctx, "u2"), ErrNotDurable)
	_, err = u.Validate(ctx, "u2")
	require.ErrorIs(t, err, ErrBlocked, "blocked")
}

func TestDurabilityOptionChecked(t *testing.T) {
	nop := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer nop.Close()
	for _, d := range [][2]int{{0, 100}, {-1, 100}, {65, 100}, {1, 0}, {1, 60000}} {
		_, err := New(nop, WithDurability(d[0], time.Duration(d[1])*time.Millisecond))
		assert.ErrorIs(t, err, ErrInvalid, "%v", d)
		_, err = NewUsers(nop, WithDurability(d[0], time.Duration(d[1])*time.Millisecond))
		assert.ErrorIs(t, err, ErrInvalid, "%v", d)
	}
	_, err := New(nop, WithDurability(1, 100*time.Millisecond))
	assert.NoError(t, err)
}

// A network failure or a timeout is never reported as a business answer
// (not found, invalid or reused token, blocked), whichever call meets it.
func TestOutagesAreNotOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{ContextTimeoutEnabled: true, MaxRetries: -1})
	s, err := New(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	u, err := NewUsers(pc, WithNamespace(e.NS))
	require.NoError(t, err)
	sess, toks, err := s.Create(ctx, Info{UserID: "u1"})
	require.NoError(t, err)
	p.Stall()
	defer p.Resume()
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	calls := map[string]func() error{
		"create":         func() error { _, _, err := s.Create(short(), Info{UserID: "u1"}); return err },
		"get":            func() error { _, err := s.Get(short(), "u1", sess.ID); return err },
		"get missing":    func() error { _, err := s.Get(short(), "u1", "nope"); return err },
		"authenticate":   func() error { _, _, err := s.Authenticate(short(), u, "u1", sess.ID); return err },
		"verify refresh": func() error { return s.VerifyRefresh(short(), "u1", sess.ID, toks.Refresh) },
		"rotate refresh": func() error { _, err := s.RotateRefresh(short(), "u1", sess.ID, toks.Refresh); return err },
		"update":         func() error { return s.Update(short(), "u1", sess.ID, Changes{}) },
		"list":           func() error { _, err := s.List(short(), "u1"); return err },
		"revoke":         func() error { _, err := s.Revoke(short(), "u1", sess.ID); return err },
		"revoke all":     func() error { _, err := s.RevokeAll(short(), "u1"); return err },
		"revoke token":   func() error { _, err := s.RevokeToken(short(), "j", time.Now().Add(time.Hour)); return err },
		"is revoked":     func() error { _, err := s.IsRevoked(short(), "j"); return err },
		"login":          func() error { _, err := u.Login(short(), "u1", LoginInfo{DeviceID: "d1"}); return err },
		"validate":       func() error { _, err := u.Validate(short(), "u1"); return err },
		"block":          func() error { return u.Block(short(), "u1") },
		"unblock":        func() error { return u.Unblock(short(), "u1") },
	}
	for name, call := range calls {
		err := call()
		require.Error(t, err, name)
		for _, s := range []error{ErrNotFound, ErrInvalidToken, ErrTokenReused, ErrBlocked, ErrInvalid} {
			assert.NotErrorIs(t, err, s, "%s: %v", name, err)
		}
	}
}

// The revocation of a session on a reused refresh token is a write like
// any other: with WithDurability it waits for the replicas, and reports
// ErrNotDurable beside ErrTokenReused when they do not have it (here:
// the test servers have none).
func TestReuseRevocationIsDurable(t *testing.T) {
	e, s := newStore(t, WithDurability(1, 20*time.Millisecond))
	ctx := e.Ctx()
	sess, toks, err := s.Create(ctx, Info{UserID: "u1"})
	require.ErrorIs(t, err, ErrNotDurable)
	fresh, err := s.RotateRefresh(ctx, "u1", sess.ID, toks.Refresh)
	require.ErrorIs(t, err, ErrNotDurable)
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, fresh)
	require.ErrorIs(t, err, ErrNotDurable)
	_, err = s.RotateRefresh(ctx, "u1", sess.ID, toks.Refresh) // rotated away twice: reuse
	require.ErrorIs(t, err, ErrTokenReused)
	require.ErrorIs(t, err, ErrNotDurable, "the revocation waited for the replicas")
	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound, "revoked")
}
