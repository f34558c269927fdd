package aimemory

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Inspector.ReadView reads what User and Window read, in one pipeline (one round
// trip, on a cluster too: a user's keys share a slot), and validates as
// they do.
func TestReadView(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessages(4))
	turns := []Message{msg(System, "be brief", 3), msg(User, "a", 1), msg(Assistant, "b", 2), msg(User, "c", 3),
		msg(Assistant, "d", 4), msg(User, "e", 5)}
	for _, part := range [][]Message{turns[:3], turns[3:]} {
		_, err := m.Append(ctx, "u1", "c1", part)
		require.NoError(t, err)
	}
	_, err := m.AddTopics(ctx, "u1", "redis", "go")
	require.NoError(t, err)

	user, err := m.User(ctx, "u1")
	require.NoError(t, err)
	require.Equal(t, "c1", user.LastConversationID)
	for _, opts := range [][]WindowOption{nil, {WithLastN(2)}, {WithTokenBudget(9)}, {WithTokenBudget(9), WithoutSummary()}} {
		w, err := m.Window(ctx, "u1", "c1", opts...)
		require.NoError(t, err)
		fresh := e.FreshClient()
		trips := harness.CountTrips(fresh)
		rm, err := NewInspector(fresh, WithNamespace(e.NS), WithMaxMessages(4))
		require.NoError(t, err)
		v, err := rm.ReadView(ctx, "u1", "c1", opts...)
		require.NoError(t, err)
		require.Equal(t, user, v.User)
		require.Equal(t, w.System, v.Window.System)
		require.Equal(t, w.Summary, v.Window.Summary)
		require.Equal(t, contents(w.Messages), contents(v.Window.Messages))
		require.Equal(t, w.Messages, v.Window.Messages)
		w.Messages, v.Window.Messages = nil, nil
		require.Equal(t, w, v.Window)
		// The first pipeline loads the scripts (NOSCRIPT, then by hash):
		// the next is one round trip.
		trips.Reset()
		_, err = rm.ReadView(ctx, "u1", "c1", opts...)
		require.NoError(t, err)
		require.Equal(t, int64(1), trips.Total(), "one pipeline")
	}

	in, err := NewInspector(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	// A user and a conversation that do not exist: a zero context and
	// an empty window.
	v, err := in.ReadView(ctx, "nobody", "none")
	require.NoError(t, err)
	require.Empty(t, v.User.LastConversationID)
	require.Equal(t, user.Day, v.User.Day)
	require.Zero(t, v.Window.Length)
	require.Empty(t, v.Window.Messages)

	_, err = in.ReadView(ctx, "u1", "c1", WithLastN(0))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = in.ReadView(ctx, "u1", "c1", WithTokenBudget(maxTokens+1))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = in.ReadView(ctx, "", "c1")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = in.ReadView(ctx, "u1", "c1", WithTokenBudget(2))
	require.ErrorIs(t, err, ErrBudgetTooSmall)
}

// NewInspector refuses what New refuses, and reads under its own
// namespace only.
func TestNewInspector(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	_, err := NewInspector(nil)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewInspector(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewInspector(e.Client, WithNamespace(keys.Namespace{Prefix: "a{b"}))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewInspector(e.Client, WithTimeZone(nil))
	require.ErrorIs(t, err, ErrInvalid)

	m := newMemory(t, e)
	_, err = m.Append(ctx, "u1", "c1", []Message{msg(User, "a", 1)})
	require.NoError(t, err)
	other, err := NewInspector(e.Client, WithNamespace(e.NS.Sub("other:")))
	require.NoError(t, err)
	v, err := other.ReadView(ctx, "u1", "c1")
	require.NoError(t, err)
	require.Empty(t, v.User.LastConversationID)
	require.Zero(t, v.Window.Length)
	in, err := NewInspector(e.Client, WithNamespace(e.NS), WithMaxMessages(10)) // an option of New that reads ignore
	require.NoError(t, err)
	v, err = in.ReadView(ctx, "u1", "c1")
	require.NoError(t, err)
	require.Equal(t, "c1", v.User.LastConversationID)
	require.EqualValues(t, 1, v.User.TokensToday)
	require.Equal(t, 1, v.Window.Length)
	require.Equal(t, []string{"a"}, contents(v.Window.Messages))
}
