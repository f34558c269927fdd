package session_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/session"
)

func TestIndexedUsers(t *testing.T) {
	env := harness.New(t)
	s, err := session.New(env.Client, session.WithNamespace(env.NS))
	require.NoError(t, err)
	users, err := session.IndexedUsers(env.Ctx(), env.Client, env.NS, 10)
	require.NoError(t, err)
	require.Empty(t, users)
	for _, u := range []string{"b:colon", "a", "b:colon"} {
		_, _, err := s.Create(env.Ctx(), session.Info{UserID: u})
		require.NoError(t, err)
	}
	users, err = session.IndexedUsers(env.Ctx(), env.Client, env.NS, 10)
	require.NoError(t, err)
	require.Equal(t, []session.IndexedUser{{ID: "b:colon", Entries: 2}, {ID: "a", Entries: 1}}, users)
	users, err = session.IndexedUsers(env.Ctx(), env.Client, env.NS, 1)
	require.NoError(t, err)
	require.Len(t, users, 1)
	_, err = session.IndexedUsers(env.Ctx(), env.Client, env.NS, 0)
	require.ErrorIs(t, err, session.ErrInvalid)
}
