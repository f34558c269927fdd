package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
)

// A session created with its own idle timeout and lifetime cap keeps
// them: every call that slides it (Get, Update, Authenticate, Renew)
// slides by its own idle timeout, its absolute expiry is its own, and
// Cookie's Max-Age follows it; a session without them keeps the Store's.
func TestPerSessionLifetime(t *testing.T) {
	e, s := newStore(t) // Store: 1h idle, 24h cap
	ctx := e.Ctx()
	users, err := NewUsers(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	_, err = users.Login(ctx, "u1", LoginInfo{DeviceID: "d1"})
	require.NoError(t, err)

	const idle, life = 7 * 24 * time.Hour, 30 * 24 * time.Hour // remember me
	start := e.Now()
	sess, tok, err := s.Create(ctx, Info{UserID: "u1", IdleTimeout: idle, MaxLifetime: life})
	require.NoError(t, err)
	plain, _ := mustCreate(t, e, s, "u1")
	assert.Equal(t, idle, sess.IdleTimeout)
	assert.WithinDuration(t, start.Add(life), sess.AbsoluteExpiry, 2*time.Second)
	assert.WithinDuration(t, start.Add(idle), sess.ExpiresAt, 2*time.Second)
	c := Cookie("", tok.Handle, sess)
	assert.InDelta(t, life.Seconds(), float64(c.MaxAge), 5, "the cookie lives as long as the session's own cap")
	assert.Zero(t, plain.IdleTimeout)
	assert.WithinDuration(t, start.Add(defaultLifetime), plain.AbsoluteExpiry, 2*time.Second)

	k := sessKey(t, e, "u1", sess.ID)
	check := func(what string, exp time.Time) {
		t.Helper()
		now := e.Now()
		assert.WithinDuration(t, now.Add(idle), exp, 2*time.Second, what)
		assert.InDelta(t, idle.Seconds(), pttl(t, e, k).Seconds(), 2, what+": the hash's TTL")
		score, err := e.Client.ZScore(ctx, idxKey(t, e, "u1"), sess.ID).Result()
		require.NoError(t, err)
		assert.WithinDuration(t, now.Add(idle), time.UnixMilli(int64(score)), 2*time.Second, what+": the index score")
	}
	e.Advance(time.Second)
	got, err := s.Get(ctx, "u1", sess.ID)
	require.NoError(t, err)
	assert.Equal(t, idle, got.IdleTimeout)
	assert.True(t, got.AbsoluteExpiry.Equal(sess.AbsoluteExpiry))
	check("Get", got.ExpiresAt)
	require.NoError(t, s.Update(ctx, "u1", sess.ID, Changes{Set: map[string]string{"x": "1"}}))
	check("Update", time.Now().Add(idle))
	got, _, err = s.Authenticate(ctx, users, "u1", sess.ID)
	require.NoError(t, err)
	check("Authenticate", got.ExpiresAt)
	got, _, err = s.Renew(ctx, "u1", sess.ID)
	require.NoError(t, err)
	assert.Equal(t, idle, got.IdleTimeout, "the idle timeout moves with the session")
	sess, k = got, sessKey(t, e, "u1", got.ID)
	check("Renew", got.ExpiresAt)
	devs, err := s.Devices(ctx, "u1")
	require.NoError(t, err)
	require.Len(t, devs, 2)
	assert.Equal(t, plain.ID, devs[0].ID, "the Store's 1h session expires first")

	got, err = s.Get(ctx, "u1", plain.ID)
	require.NoError(t, err)
	assert.WithinDuration(t, e.Now().Add(defaultIdleTimeout), got.ExpiresAt, 2*time.Second, "the other session keeps the Store's")
	e.RequireTTLs(nil)
}

// A short per-session idle timeout ends the session on the server when
// it is not used, while a Store-default session lives on.
func TestPerSessionIdleExpires(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, _, err := s.Create(ctx, Info{UserID: "u1", IdleTimeout: 400 * time.Millisecond, MaxLifetime: time.Hour})
	require.NoError(t, err)
	plain, _ := mustCreate(t, e, s, "u1")
	e.Advance(250 * time.Millisecond)
	_, err = s.Get(ctx, "u1", sess.ID)
	require.NoError(t, err, "used within its idle timeout")
	e.Advance(250 * time.Millisecond)
	_, err = s.Get(ctx, "u1", sess.ID)
	require.NoError(t, err, "the Get slid it by its own idle timeout")
	e.Advance(600 * time.Millisecond)
	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound, "idle past its own timeout")
	_, err = s.Get(ctx, "u1", plain.ID)
	require.NoError(t, err)
}

func TestPerSessionLifetimeInvalid(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	for _, in := range []Info{
		{UserID: "u1", MaxLifetime: -time.Second},
		{UserID: "u1", MaxLifetime: maxLifetime + time.Millisecond},
		{UserID: "u1", IdleTimeout: time.Microsecond},
		{UserID: "u1", IdleTimeout: defaultLifetime + time.Second},
		{UserID: "u1", IdleTimeout: 2 * time.Hour, MaxLifetime: time.Hour},
		{UserID: "u1", Extra: map[string]string{"idle_timeout": "5"}},
	} {
		_, _, err := s.Create(ctx, in)
		require.ErrorIs(t, err, ErrInvalid, "%+v", in)
	}
	assert.Empty(t, e.Keys())

	// A stored idle_timeout this package did not write is corrupt.
	sess, _, err := s.Create(ctx, Info{UserID: "u1", IdleTimeout: time.Minute})
	require.NoError(t, err)
	k := sessKey(t, e, "u1", sess.ID)
	require.NoError(t, e.Client.HSet(ctx, k, fIdleTimeout, "forever").Err())
	_, err = s.Get(ctx, "u1", sess.ID)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), k)
}
