package aimemory

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/internal/harness"
)

// fill gives user a bit of everything: conversations with summaries and
// pending evictions, a context, scoped cached responses and RAG results.
func fill(t *testing.T, ctx context.Context, m *Memory, user string) {
	t.Helper()
	for c := 0; c < 3; c++ {
		conv := user + "-conv" + strconv.Itoa(c)
		for i := 0; i < 6; i++ {
			_, err := m.Append(ctx, user, conv, []Message{msg(User, user+" says "+strconv.Itoa(i), 2)})
			require.NoError(t, err)
		}
	}
	_, err := m.AddTopics(ctx, user, "topic of "+user)
	require.NoError(t, err)
	require.NoError(t, m.SetPreferences(ctx, user, json.RawMessage(`{"name":"`+user+`"}`)))
	_, err = m.Response(ctx, Request{Model: "m1", Messages: []Message{msg(User, "hi", 1)}, User: user},
		func(context.Context) (string, error) { return "hello " + user, nil })
	require.NoError(t, err)
	_, err = m.RAG(ctx, Query{Text: "docs", User: user},
		func(context.Context) ([]json.RawMessage, error) {
			return []json.RawMessage{json.RawMessage(`"chunk of ` + user + `"`)}, nil
		})
	require.NoError(t, err)
}

// Erasing one user deletes everything of that user and leaves every key
// of another user (and shared entries) byte-identical.
func TestEraseUserLeavesOthersByteIdentical(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessages(4), WithCacheOptions(cache.WithoutHitCounts()),
		WithSummarizer(func(_ context.Context, prev string, ev []Message) (string, error) {
			return prev + strings.Join(contents(ev), ";"), nil
		}))
	fill(t, ctx, m, "alice")
	fill(t, ctx, m, "bob")
	_, err := m.Response(ctx, Request{Model: "m1", Messages: []Message{msg(User, "shared", 1)}},
		func(context.Context) (string, error) { return "for all", nil })
	require.NoError(t, err)

	dump := func() map[string]string {
		out := map[string]string{}
		for _, k := range e.Keys() {
			out[k] = snapshot(t, ctx, e, k)
		}
		return out
	}
	before := dump()
	require.NotEmpty(t, before)

	erased, err := m.EraseUser(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, Erased{Conversations: 3, Responses: 1, RAG: 1}, erased)

	after := dump()
	kept := 0
	for k, v := range after {
		if old, ok := before[k]; ok {
			assert.Equal(t, old, v, "%s changed", k)
			assert.NotContains(t, k, "alice", "%s survived", k)
			kept++
			continue
		}
		// New keys: only the generations of alice's cache tags, opaque
		// IDs that stop loads in flight from storing her entries again.
		assert.Contains(t, k, "cache:tag-gen:", "new key %s", k)
		assert.Contains(t, k, "alice")
	}
	// Gone: exactly alice's keys, by name, and her cache entries.
	want := map[string]bool{}
	for k := range before {
		if strings.Contains(k, "alice") {
			want[k] = true
		}
	}
	rh, err := Request{Model: "m1", Messages: []Message{msg(User, "hi", 1)}, User: "alice"}.Hash()
	require.NoError(t, err)
	qh, err := Query{Text: "docs", User: "alice"}.Hash()
	require.NoError(t, err)
	for _, k := range []string{key(t, e, responseKey, "m1", rh), key(t, e, responseMetaKey, "m1", rh), key(t, e, ragKey, qh), key(t, e, ragMetaKey, qh)} {
		require.Contains(t, before, k)
		want[k] = true
	}
	gone := map[string]bool{}
	for k := range before {
		if _, ok := after[k]; !ok {
			gone[k] = true
		}
	}
	assert.Equal(t, want, gone)
	assert.Greater(t, kept, 10, "bob's keys and the shared entry are kept")

	u, err := m.User(ctx, "alice")
	require.NoError(t, err)
	assert.Empty(t, u.RecentTopics)
	w, err := m.Window(ctx, "bob", "bob-conv0")
	require.NoError(t, err)
	assert.Equal(t, 4, w.Length)
	require.NotNil(t, w.Summary)

	again, err := m.EraseUser(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, Erased{}, again, "idempotent")
}

// snapshot returns key's value as bytes: DUMP's serialization on a real
// server; on miniredis (whose DUMP takes strings only) the type and the
// whole content.
func snapshot(t *testing.T, ctx context.Context, e *harness.Env, k string) string {
	t.Helper()
	if e.Mini == nil {
		v, err := e.Client.Dump(ctx, k).Result()
		require.NoError(t, err)
		return v
	}
	typ, err := e.Client.Type(ctx, k).Result()
	require.NoError(t, err)
	var v any
	switch typ {
	case "string":
		v, err = e.Client.Get(ctx, k).Result()
	case "list":
		v, err = e.Client.LRange(ctx, k, 0, -1).Result()
	case "hash":
		v, err = e.Client.HGetAll(ctx, k).Result()
	case "zset":
		v, err = e.Client.ZRangeWithScores(ctx, k, 0, -1).Result()
	default:
		t.Fatalf("%s holds a %s", k, typ)
	}
	require.NoError(t, err)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return typ + " " + string(b)
}

// A summary the Summarizer computed from a conversation's messages
// before the conversation was deleted (DeleteConversation or EraseUser)
// is not stored into a new conversation of the same ID, although the new
// one's summary version is 0 again: the new conversation has another
// epoch.
func TestStaleSummaryRejectedAfterDelete(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	other := newMemory(t, e, WithMaxMessages(2)) // another process, no summarizer
	for name, drop := range map[string]func(ctx context.Context, user string) error{
		"delete": func(ctx context.Context, user string) error { return other.DeleteConversation(ctx, user, "c") },
		"erase":  func(ctx context.Context, user string) error { _, err := other.EraseUser(ctx, user); return err },
	} {
		t.Run(name, func(t *testing.T) {
			user := "u-" + name
			calls := 0
			m := newMemory(t, e, WithMaxMessages(2), WithSummarizer(func(ctx context.Context, prev string, ev []Message) (string, error) {
				calls++
				if calls == 1 {
					// While this summary is computed, the conversation is
					// deleted and a new one of the same ID begins.
					if err := drop(ctx, user); err != nil {
						return "", err
					}
					if _, err := other.Append(ctx, user, "c", []Message{msg(User, "new", 1)}); err != nil {
						return "", err
					}
				}
				return prev + "summary of " + strings.Join(contents(ev), ","), nil
			}))
			_, err := m.Append(ctx, user, "c", []Message{msg(User, "old1", 1), msg(User, "old2", 1)})
			require.NoError(t, err)
			res, err := m.Append(ctx, user, "c", []Message{msg(User, "old3", 1)})
			require.NoError(t, err)
			require.Equal(t, 1, res.Evicted)
			require.NoError(t, res.SummaryErr)
			require.Equal(t, 1, calls)
			w, err := m.Window(ctx, user, "c")
			require.NoError(t, err)
			assert.Equal(t, []string{"new"}, contents(w.Messages))
			assert.Nil(t, w.Summary, "the deleted conversation's summary is not the new one's")
		})
	}
}
