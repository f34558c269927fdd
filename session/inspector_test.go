package session_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/session"
)

// NewInspector checks the client and the options as New does.
func TestNewInspector(t *testing.T) {
	env := harness.New(t)
	_, err := session.NewInspector(nil)
	require.ErrorIs(t, err, session.ErrInvalid)
	noDeadlines := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = noDeadlines.Close() })
	_, err = session.NewInspector(noDeadlines)
	require.ErrorIs(t, err, session.ErrInvalid)
	_, err = session.NewInspector(env.Client, session.WithMaxSessions(-1))
	require.ErrorIs(t, err, session.ErrInvalid)
	require.ErrorContains(t, err, "new inspector")
	_, err = session.NewInspector(env.Client, session.WithDurability(0, time.Second)) // refused by New too
	require.ErrorIs(t, err, session.ErrInvalid)
	_, err = session.NewInspector(env.Client, session.WithNamespace(env.NS), session.WithMaxSessions(3), session.WithUserTTL(time.Hour))
	require.NoError(t, err, "options that mean nothing to reads are accepted")
}

func TestIndexedUsers(t *testing.T) {
	env := harness.New(t)
	s, err := session.New(env.Client, session.WithNamespace(env.NS))
	require.NoError(t, err)
	in, err := session.NewInspector(env.Client, session.WithNamespace(env.NS))
	require.NoError(t, err)
	users, err := in.IndexedUsers(env.Ctx(), 10)
	require.NoError(t, err)
	require.Empty(t, users)
	for _, u := range []string{"b:colon", "a", "b:colon"} {
		_, _, err := s.Create(env.Ctx(), session.Info{UserID: u})
		require.NoError(t, err)
	}
	users, err = in.IndexedUsers(env.Ctx(), 10)
	require.NoError(t, err)
	require.Equal(t, []session.IndexedUser{{ID: "b:colon", Entries: 2}, {ID: "a", Entries: 1}}, users)
	users, err = in.IndexedUsers(env.Ctx(), 1)
	require.NoError(t, err)
	require.Len(t, users, 1)
	_, err = in.IndexedUsers(env.Ctx(), 0)
	require.ErrorIs(t, err, session.ErrInvalid)
	_, err = in.IndexedUsers(env.Ctx(), 10001)
	require.ErrorIs(t, err, session.ErrInvalid)

	// Another namespace's indexes are not listed.
	ns := env.NS
	ns.Prefix += "other:"
	other, err := session.NewInspector(env.Client, session.WithNamespace(ns))
	require.NoError(t, err)
	users, err = other.IndexedUsers(env.Ctx(), 10)
	require.NoError(t, err)
	require.Empty(t, users)
}
