package aimemory

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func newMemory(t testing.TB, e *harness.Env, opts ...Option) *Memory {
	t.Helper()
	m, err := New(e.Client, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func msg(role Role, content string, tokens int) Message {
	return Message{Role: role, Content: content, Tokens: tokens}
}

func contents(ms []Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func key(t testing.TB, e *harness.Env, tpl *keys.Template, args ...string) string {
	t.Helper()
	k, err := tpl.Key(e.NS, args...)
	require.NoError(t, err)
	return k
}

func TestAppendAndWindow(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessages(4))

	res, err := m.Append(ctx, "u1", "c1", []Message{msg(System, "be brief", 3), msg(User, "hello", 2)})
	require.NoError(t, err)
	assert.Equal(t, Appended{Length: 2, TokensToday: 5, Tokens: 5}, res)
	for i := 0; i < 4; i++ {
		res, err = m.Append(ctx, "u1", "c1", []Message{msg(Assistant, "a"+strconv.Itoa(i), 1)})
		require.NoError(t, err)
	}
	assert.Equal(t, 4, res.Length, "capped")
	assert.Equal(t, 1, res.Evicted)
	assert.Equal(t, int64(9), res.TokensToday)

	w, err := m.Window(ctx, "u1", "c1")
	require.NoError(t, err)
	require.NotNil(t, w.System, "the system prompt is pinned")
	assert.Equal(t, "be brief", w.System.Content)
	assert.Equal(t, []string{"a1", "a2", "a3"}, contents(w.Messages))
	assert.Equal(t, 6, w.Tokens)
	assert.Equal(t, 4, w.Length)
	assert.Zero(t, w.Omitted)

	w, err = m.Window(ctx, "u1", "c1", WithLastN(2))
	require.NoError(t, err)
	assert.Equal(t, []string{"a2", "a3"}, contents(w.Messages))
	assert.Equal(t, 1, w.Omitted)
	assert.Equal(t, []string{"be brief", "a2", "a3"}, contents(w.All()))

	// The stored JSON is seed 001's item.
	raw, err := e.Client.LIndex(ctx, key(t, e, convKey, "u1", "c1"), 1).Result()
	require.NoError(t, err)
	var item map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &item))
	assert.Equal(t, "assistant", item["role"])
	assert.Equal(t, "a1", item["content"])
	assert.EqualValues(t, 1, item["tokens"])
	_, err = time.Parse(time.RFC3339, item["timestamp"].(string))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(raw, `{"role":"assistant","content":"a1","timestamp":"`), raw)

	u, err := m.User(ctx, "u1")
	require.NoError(t, err)
	assert.Equal(t, "c1", u.LastConversationID)
	assert.Equal(t, int64(9), u.TokensToday)

	// TTLs: conversation 1h, user context at least 24h.
	ttl := e.Client.PTTL(ctx, key(t, e, convKey, "u1", "c1")).Val()
	assert.InDelta(t, float64(time.Hour), float64(ttl), float64(time.Minute))
	assert.GreaterOrEqual(t, e.Client.PTTL(ctx, key(t, e, userKey, "u1")).Val(), 23*time.Hour)
	e.RequireTTLs(nil)

	w, err = m.Window(ctx, "u1", "nothing")
	require.NoError(t, err)
	assert.Equal(t, Window{Messages: []Message{}}, w)
}

func TestCountsTokensWhenZero(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithCounter(CounterFunc(func(s string) (int, error) { return len(strings.Fields(s)), nil })))
	res, err := m.Append(ctx, "u", "c", []Message{{Role: User, Content: "three small words"}, {Role: User, Content: "two words", Tokens: 7}})
	require.NoError(t, err)
	assert.Equal(t, 10, res.Tokens)
	w, err := m.Window(ctx, "u", "c")
	require.NoError(t, err)
	assert.Equal(t, 3, w.Messages[0].Tokens)
	assert.Equal(t, 7, w.Messages[1].Tokens)
}

func TestUserContext(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxTopics(3))
	list, err := m.AddTopics(ctx, "u", "go", "redis")
	require.NoError(t, err)
	assert.Equal(t, []string{"redis", "go"}, list)
	list, err = m.AddTopics(ctx, "u", "lua", "go", `"quoted" <b>`)
	require.NoError(t, err)
	assert.Equal(t, []string{`"quoted" <b>`, "go", "lua"}, list)
	require.NoError(t, m.SetPreferences(ctx, "u", json.RawMessage(`{ "tone": "formal" }`)))
	u, err := m.User(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, list, u.RecentTopics)
	assert.JSONEq(t, `{"tone":"formal"}`, string(u.Preferences))
	assert.Equal(t, time.Now().UTC().Format(time.DateOnly), u.Day)
	e.RequireTTLs(nil)

	u, err = m.User(ctx, "nobody")
	require.NoError(t, err)
	assert.Empty(t, u.RecentTopics)
	assert.NotEmpty(t, u.Day)
}

func TestDeleteConversation(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e)
	_, err := m.Append(ctx, "u", "c", []Message{msg(User, "x", 1)})
	require.NoError(t, err)
	_, err = m.Append(ctx, "u", "other", []Message{msg(User, "y", 1)})
	require.NoError(t, err)
	require.NoError(t, m.DeleteConversation(ctx, "u", "c"))
	require.NoError(t, m.DeleteConversation(ctx, "u", "c"), "idempotent")
	ids, err := e.Client.ZRange(ctx, key(t, e, indexKey, "u"), 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"other"}, ids)
	w, err := m.Window(ctx, "u", "c")
	require.NoError(t, err)
	assert.Zero(t, w.Length)
	w, err = m.Window(ctx, "u", "other")
	require.NoError(t, err)
	assert.Equal(t, 1, w.Length)
}

var _ = context.Background
