package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/keys"
)

func TestAuthenticate(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	users, err := NewUsers(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	sess, _ := mustCreate(t, e, s, "u1")
	key := sessKey(t, e, "u1", sess.ID)

	_, _, err = s.Authenticate(ctx, users, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound, "no user record")
	_, _, err = s.Authenticate(ctx, nil, "u1", sess.ID)
	require.ErrorIs(t, err, ErrInvalid)

	_, err = users.Login(ctx, "u1", LoginInfo{DeviceID: "d", Anonymous: true})
	require.NoError(t, err)
	require.NoError(t, e.Client.PExpire(ctx, key, time.Minute).Err())
	got, usr, err := s.Authenticate(ctx, users, "u1", sess.ID)
	require.NoError(t, err)
	assert.Equal(t, sess.ID, got.ID)
	assert.Equal(t, StatusAnonymous, usr.Status)
	assert.False(t, usr.CanWrite())
	assert.True(t, pttl(t, e, key) > 59*time.Minute, "slid")

	require.NoError(t, users.Block(ctx, "u1"))
	require.NoError(t, e.Client.PExpire(ctx, key, time.Minute).Err())
	_, _, err = s.Authenticate(ctx, users, "u1", sess.ID)
	require.ErrorIs(t, err, ErrBlocked)
	assert.True(t, pttl(t, e, key) <= time.Minute, "a blocked user's session is not slid")

	_, err = s.Revoke(ctx, "u1", sess.ID)
	require.NoError(t, err)
	_, _, err = s.Authenticate(ctx, users, "u1", sess.ID)
	require.ErrorIs(t, err, ErrNotFound)

	ukey, _ := userKey.Key(e.NS, "u1")
	require.NoError(t, e.Client.HSet(ctx, ukey, "status", "weird").Err())
	sess, _ = mustCreate(t, e, s, "u1")
	_, _, err = s.Authenticate(ctx, users, "u1", sess.ID)
	require.ErrorIs(t, err, keys.ErrCorrupt)
}

func TestAuthenticateWithoutHashTags(t *testing.T) {
	e, _ := newStore(t)
	if e.Backend == "cluster" {
		t.Skip("untagged keys are for standalone servers")
	}
	ctx := e.Ctx()
	ns := e.NS
	ns.NoHashTags = true
	s, err := New(e.Client, WithNamespace(ns))
	require.NoError(t, err)
	users, err := NewUsers(e.Client, WithNamespace(ns))
	require.NoError(t, err)
	sess, _, err := s.Create(ctx, Info{UserID: "42"})
	require.NoError(t, err)
	_, err = users.Login(ctx, "42", LoginInfo{DeviceID: "d"})
	require.NoError(t, err)
	got, usr, err := s.Authenticate(ctx, users, "42", sess.ID)
	require.NoError(t, err)
	assert.Equal(t, sess.ID, got.ID)
	assert.True(t, usr.CanWrite())

	// Events on untagged keys: the reader places each stream by the slot
	// it was read for, so a resumed reader reads nothing twice.
	ev, err := New(e.Client, WithNamespace(ns), WithEvents(100))
	require.NoError(t, err)
	sess, _, err = ev.Create(ctx, Info{UserID: "43"})
	require.NoError(t, err)
	_, err = ev.Revoke(ctx, "43", sess.ID)
	require.NoError(t, err)
	r := ev.NewEventReader(time.Time{})
	evs, err := r.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"created/create", "revoked/revoke"}, kindsOf(evs, sess.ID))
	again, err := ev.ResumeEventReader(r.Cursor())
	require.NoError(t, err)
	evs, err = again.Read(ctx)
	require.NoError(t, err)
	assert.Empty(t, evs)
	for _, k := range dataKeys(t, e) {
		assert.NotContains(t, k, "{", "seed-exact keys: %s", k)
	}
}
