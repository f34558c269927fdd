package aimemory

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Every key pattern of the package, holding a wrong type, garbage or an
// out-of-range value: the operation that reads it fails with
// keys.ErrCorrupt naming that exact key (and, for a write, writes
// nothing), or repairs it as documented (the caches reload an entry
// whose metadata is foreign).
func TestCorruptionTable(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessages(2), WithSummarizer(func(_ context.Context, prev string, ev []Message) (string, error) {
		return prev + "+", nil
	}))
	type plant func(ctx context.Context, key string) error
	str := func(v string) plant {
		return func(ctx context.Context, k string) error { return e.Client.Set(ctx, k, v, time.Minute).Err() }
	}
	list := func(vs ...string) plant {
		return func(ctx context.Context, k string) error {
			for _, v := range vs {
				if err := e.Client.RPush(ctx, k, v).Err(); err != nil {
					return err
				}
			}
			return e.Client.Expire(ctx, k, time.Minute).Err()
		}
	}
	hash := func(kv ...string) plant {
		return func(ctx context.Context, k string) error {
			if err := e.Client.HSet(ctx, k, kv).Err(); err != nil {
				return err
			}
			return e.Client.Expire(ctx, k, time.Minute).Err()
		}
	}
	zset := func(member string) plant {
		return func(ctx context.Context, k string) error {
			if err := e.Client.ZAdd(ctx, k, redis.Z{Score: 1, Member: member}).Err(); err != nil {
				return err
			}
			return e.Client.Expire(ctx, k, time.Minute).Err()
		}
	}
	// overwrite replaces a cached value after a first load stored it, so
	// the entry's metadata says it is fresh.
	overwrite := func(load func(ctx context.Context, id string) error, v string) func(id string) plant {
		return func(id string) plant {
			return func(ctx context.Context, k string) error {
				if err := load(ctx, id); err != nil {
					return err
				}
				return e.Client.Set(ctx, k, v, redis.KeepTTL).Err()
			}
		}
	}
	good := `{"role":"user","content":"ok","timestamp":"2026-01-16T10:00:00Z","tokens":1}`
	appendOne := func(ctx context.Context, id string) error {
		_, err := m.Append(ctx, id, "c", []Message{msg(User, "x", 1)})
		return err
	}
	window := func(ctx context.Context, id string) error { _, err := m.Window(ctx, id, "c"); return err }
	budget := func(ctx context.Context, id string) error {
		_, err := m.Window(ctx, id, "c", WithTokenBudget(100))
		return err
	}
	big := newMemory(t, e, WithMaxMessages(readAllWindow+1)) // budget windows by the window script
	script := func(ctx context.Context, id string) error {
		_, err := big.Window(ctx, id, "c", WithTokenBudget(100))
		return err
	}
	user := func(ctx context.Context, id string) error { _, err := m.User(ctx, id); return err }
	topics := func(ctx context.Context, id string) error { _, err := m.AddTopics(ctx, id, "t"); return err }
	summarize := func(ctx context.Context, id string) error {
		if err := e.Client.RPush(ctx, key(t, e, convKey, id, "c"), good).Err(); err != nil {
			return err
		}
		_ = e.Client.Expire(ctx, key(t, e, convKey, id, "c"), time.Minute)
		_, err := m.Summarize(ctx, id, "c")
		return err
	}
	erase := func(ctx context.Context, id string) error { _, err := m.EraseUser(ctx, id); return err }
	rag := func(ctx context.Context, id string) error {
		_, err := m.RAG(ctx, Query{Text: "q" + id}, func(context.Context) ([]json.RawMessage, error) {
			return []json.RawMessage{json.RawMessage(`1`)}, nil
		})
		return err
	}
	response := func(ctx context.Context, id string) error {
		_, err := m.Response(ctx, Request{Model: "m", Messages: []Message{msg(User, id, 1)}}, func(context.Context) (string, error) {
			return "fine", nil
		})
		return err
	}
	conv := func(id string) []string { return []string{id, "c"} }
	uid := func(id string) []string { return []string{id} }
	ragID := func(id string) []string {
		h, _ := Query{Text: "q" + id}.Hash()
		return []string{h}
	}
	respID := func(id string) []string {
		h, _ := Request{Model: "m", Messages: []Message{msg(User, id, 1)}}.Hash()
		return []string{"m", h}
	}
	fixed := func(p plant) func(string) plant { return func(string) plant { return p } }
	for i, tc := range []struct {
		name    string
		key     *keys.Template
		args    func(id string) []string
		plant   func(id string) plant
		op      func(ctx context.Context, id string) error
		corrupt bool // else: the op succeeds (documented repair)
	}{
		{"conversation: wrong type, append", convKey, conv, fixed(str("x")), appendOne, true},
		{"conversation: wrong type, window", convKey, conv, fixed(str("x")), window, true},
		{"conversation: garbage", convKey, conv, fixed(list("not json")), window, true},
		{"conversation: garbage, budget window", convKey, conv, fixed(list(good, "not json")), budget, true},
		{"conversation: garbage, window script", convKey, conv, fixed(list(good, "not json")), script, true},
		{"conversation: no tokens, window script", convKey, conv, fixed(list(`{"role":"user","content":"x"}`)), script, true},
		{"conversation: unknown role, window script", convKey, conv, fixed(list(`{"role":"wizard","content":"x","tokens":1}`)), script, true},
		{"conversation: negative tokens", convKey, conv, fixed(list(`{"role":"user","content":"x","tokens":-1}`)), window, true},
		{"conversation: no tokens", convKey, conv, fixed(list(`{"role":"user","content":"x"}`)), window, true},
		{"conversation: unknown role", convKey, conv, fixed(list(`{"role":"wizard","content":"x","tokens":1}`)), window, true},
		{"conversation: bad timestamp", convKey, conv, fixed(list(`{"role":"user","content":"x","timestamp":"soon","tokens":1}`)), window, true},
		{"conversation: garbage head met by eviction", convKey, conv, fixed(list("garbage", good)), appendOne, true},
		{"meta: wrong type", metaKey, conv, fixed(str("x")), window, true},
		{"meta: summary tokens garbage", metaKey, conv, fixed(hash("summary", "s", "summary_tokens", "many")), window, true},
		{"meta: covered out of range", metaKey, conv, fixed(hash("covered", "-3")), window, true},
		{"meta: wrong type, window script", metaKey, conv, fixed(str("x")), script, true},
		{"meta: summary tokens garbage, window script", metaKey, conv, fixed(hash("summary", "s", "summary_tokens", "many")), script, true},
		{"pending: wrong type, window script", evictedKey, conv, fixed(str("x")), script, true},
		{"meta: version garbage", metaKey, conv, fixed(hash("version", "v2")), summarize, true},
		{"meta: lost garbage, append", metaKey, conv, fixed(hash("lost", "x")), appendOne, true},
		{"meta: version garbage, append", metaKey, conv, fixed(hash("version", "1.5")), appendOne, true},
		{"request IDs: wrong type", reqsKey, conv, fixed(str("x")), appendOne, true},
		{"pending: wrong type", evictedKey, conv, fixed(str("x")), window, true},
		{"pending: garbage", evictedKey, conv, fixed(list("garbage")), summarize, true},
		{"user: wrong type, append", userKey, uid, fixed(str("x")), appendOne, true},
		{"user: wrong type, read", userKey, uid, fixed(str("x")), user, true},
		{"user: total garbage, append", userKey, uid, fixed(hash("tokens_day", time.Now().UTC().Format(time.DateOnly), "total_tokens_today", "lots")), appendOne, true},
		{"user: total negative, read", userKey, uid, fixed(hash("tokens_day", "2026-01-16", "total_tokens_today", "-5")), user, true},
		{"user: day garbage", userKey, uid, fixed(hash("tokens_day", "monday", "total_tokens_today", "5")), appendOne, true},
		{"user: topics not a list", userKey, uid, fixed(hash("recent_topics", `{"a":1}`)), topics, true},
		{"user: topics not strings", userKey, uid, fixed(hash("recent_topics", `[1,2]`)), user, true},
		{"user: preferences not JSON", userKey, uid, fixed(hash("preferences", "{oops")), user, true},
		{"conversation list: wrong type, append", indexKey, uid, fixed(str("x")), appendOne, true},
		{"conversation list: wrong type, erase", indexKey, uid, fixed(str("x")), erase, true},
		{"conversation list: member not an ID", indexKey, uid, fixed(zset("")), erase, true},
		{"rag: value not a JSON array", ragKey, ragID, overwrite(rag, `{"a":1}`), rag, true},
		{"rag: metadata of another type is reloaded", ragMetaKey, ragID, fixed(str("x")), rag, false},
		{"response: value not UTF-8", responseKey, respID, overwrite(response, "\xff\xfe"), response, true},
		{"response: metadata of another type is reloaded", responseMetaKey, respID, fixed(str("x")), response, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "c" + strconv.Itoa(i)
			k := key(t, e, tc.key, tc.args(id)...)
			require.NoError(t, tc.plant(id)(ctx, k))
			before := snapshot(t, ctx, e, k)
			err := tc.op(ctx, id)
			if !tc.corrupt {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, keys.ErrCorrupt)
			var ce *keys.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, k, ce.Key, "the error names the key at fault")
			assert.Contains(t, err.Error(), k)
			if tc.key != ragKey && tc.key != responseKey {
				assert.Equal(t, before, snapshot(t, ctx, e, k), "nothing written to the key")
			} else {
				require.NoError(t, tc.op(ctx, id), "the entry was deleted and reloads")
			}
			require.NoError(t, e.Client.Del(ctx, k).Err())
		})
	}
}

// The timestamps at the bounds of RFC 3339's years are stored and read
// back (TestInputBounds refuses the ones beyond).
func TestTimestampBounds(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e)
	for _, ts := range []time.Time{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)} {
		_, err := m.Append(ctx, "u", "edge", []Message{{Role: User, Content: "x", Tokens: 1, Timestamp: ts}})
		require.NoError(t, err, ts)
	}
	w, err := m.Window(ctx, "u", "edge")
	require.NoError(t, err)
	require.Len(t, w.Messages, 2)
	assert.Equal(t, 0, w.Messages[0].Timestamp.Year())
	assert.Equal(t, 9999, w.Messages[1].Timestamp.Year())
}

// Every duration, size and count input has a bound and a clear
// ErrInvalid beyond it, before anything is written.
func TestInputBounds(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for _, opts := range [][]Option{
		{WithMaxMessages(1)},
		{WithMaxMessages(maxMessages + 1)},
		{WithConversationTTL(time.Millisecond)},
		{WithConversationTTL(maxConversationTTL + time.Second)},
		{WithUserTTL(time.Second)},
		{WithUserTTL(maxUserTTL + time.Second)},
		{WithMaxMessageBytes(10)},
		{WithMaxMessageBytes(maxMessageBytes + 1)},
		{WithCounter(nil)},
		{WithTimeZone(nil)},
		{WithDailyBudget(-1)},
		{WithDailyBudget(maxDailyBudget + 1)},
		{WithMaxTopics(0)},
		{WithMaxTopics(maxTopics + 1)},
		{WithPipelining(-1)},
		{WithPipelining(call.MaxLanes + 1)},
		{WithRAGTTL(0)},
		{WithResponseTTL(maxCacheTTL + time.Second)},
		{WithNamespace(keys.Namespace{Prefix: "bad{"})},
	} {
		_, err := New(e.Client, opts...)
		require.ErrorIs(t, err, ErrInvalid)
	}
	_, err := New(nil)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = New(redis.NewClient(&redis.Options{Addr: e.Addr}))
	require.ErrorIs(t, err, ErrInvalid, "a client without ContextTimeoutEnabled")

	m := newMemory(t, e, WithMaxMessageBytes(300), WithCounter(CounterFunc(func(string) (int, error) { return -1, nil })))
	big := string(make([]byte, 300))
	for name, msgs := range map[string][]Message{
		"none":                 nil,
		"too many":             make([]Message, maxAppend+1),
		"unknown role":         {{Role: "wizard", Content: "x", Tokens: 1}},
		"empty content":        {{Role: User, Tokens: 1}},
		"negative tokens":      {{Role: User, Content: "x", Tokens: -1}},
		"too many tokens":      {{Role: User, Content: "x", Tokens: maxTokens + 1}},
		"oversize":             {{Role: User, Content: big, Tokens: 1}},
		"invalid UTF-8":        {{Role: User, Content: "\xff", Tokens: 1}},
		"tool without call ID": {{Role: Tool, Content: "x", Tokens: 1}},
		"call ID on a user":    {{Role: User, Content: "x", ToolCallID: "c", Tokens: 1}},
		"tool calls on a user": {{Role: User, Content: "x", ToolCalls: []ToolCall{{ID: "a", Name: "f"}}, Tokens: 1}},
		"tool call without ID": {{Role: Assistant, ToolCalls: []ToolCall{{Name: "f"}}, Tokens: 1}},
		"counter out of range": {{Role: User, Content: "x"}},
		// the reads parse RFC 3339, whose years are 0-9999: such a
		// message would make the whole conversation unreadable
		"ms taken for seconds": {{Role: User, Content: "x", Tokens: 1, Timestamp: time.Unix(1_700_000_000_000, 0)}},
		"negative year":        {{Role: User, Content: "x", Tokens: 1, Timestamp: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		_, err := m.Append(ctx, "u", "c", msgs)
		require.ErrorIs(t, err, ErrInvalid, name)
	}
	require.Empty(t, e.Keys(), "nothing written")
	_, err = m.Append(ctx, "", "c", []Message{msg(User, "x", 1)})
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, err, keys.ErrInvalid)
	_, err = m.AppendWithBudget(ctx, "u", "c", []Message{msg(User, "x", 1)}, -1)
	require.ErrorIs(t, err, ErrInvalid)
	for _, o := range []WindowOption{WithLastN(0), WithLastN(maxMessages + 1), WithTokenBudget(0), WithTokenBudget(maxTokens + 1)} {
		_, err = m.Window(ctx, "u", "c", o)
		require.ErrorIs(t, err, ErrInvalid)
	}
	_, err = m.AddTopics(ctx, "u")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = m.AddTopics(ctx, "u", string(make([]byte, maxTopicBytes+1)))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, m.SetPreferences(ctx, "u", json.RawMessage(`[1]`)), ErrInvalid)
	require.ErrorIs(t, m.SetPreferences(ctx, "u", json.RawMessage(`{"a":"`+string(make([]byte, maxPreferencesBytes))+`"}`)), ErrInvalid)
	_, err = m.Summarize(ctx, "u", "c")
	require.ErrorIs(t, err, ErrInvalid, "no summarizer")
	gen := func(context.Context) (string, error) { return "x", nil }
	_, err = m.Response(ctx, Request{Messages: []Message{msg(User, "x", 1)}}, gen)
	require.ErrorIs(t, err, ErrInvalid, "no model")
	_, err = m.Response(ctx, Request{Model: "m", Params: map[string]any{"f": func() {}}}, gen)
	require.ErrorIs(t, err, ErrInvalid, "parameters that do not encode")
	_, err = m.Response(ctx, Request{Model: "m"}, gen, WithCacheTTL(maxCacheTTL+time.Second))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = m.Response(ctx, Request{Model: "m"}, nil)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = m.RAG(ctx, Query{}, func(context.Context) ([]json.RawMessage, error) { return nil, nil })
	require.ErrorIs(t, err, ErrInvalid)
	s, err := m.Stream("u", "c")
	require.NoError(t, err)
	require.ErrorIs(t, s.Send(ctx, ""), ErrInvalid)
	require.ErrorIs(t, s.Send(ctx, big+"x"), ErrInvalid)
	_, err = m.Stream("u", "")
	require.ErrorIs(t, err, ErrInvalid)
	assert.Empty(t, e.Keys(), "nothing written")
}

// An append whose eviction drops pending messages counts them in the
// summary's lost and version fields; it checks them before its first
// write, so when one is not a count it fails with keys.ErrCorrupt naming
// the meta key and writes nothing (before, it wrote half and returned
// Redis's own error).
func TestAppendCorruptMetaCountsWriteNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessages(2), WithSummarizer(func(_ context.Context, prev string, ev []Message) (string, error) {
		return prev + "+", nil
	}))
	good := `{"role":"user","content":"ok","timestamp":"2026-01-16T10:00:00Z","tokens":1}`
	for _, field := range []string{"lost", "version"} {
		t.Run(field, func(t *testing.T) {
			user := "u-" + field
			_, err := m.Append(ctx, user, "c", []Message{msg(User, "a", 1), msg(User, "b", 1)})
			require.NoError(t, err)
			// A full pending list, so that the next eviction drops one.
			pk, mk := key(t, e, evictedKey, user, "c"), key(t, e, metaKey, user, "c")
			pending := make([]any, maxPending)
			for i := range pending {
				pending[i] = good
			}
			require.NoError(t, e.Client.RPush(ctx, pk, pending...).Err())
			require.NoError(t, e.Client.Expire(ctx, pk, time.Minute).Err())
			require.NoError(t, e.Client.HSet(ctx, mk, field, "many").Err())
			require.NoError(t, e.Client.Expire(ctx, mk, time.Minute).Err())
			ks := []string{key(t, e, convKey, user, "c"), mk, key(t, e, reqsKey, user, "c"), pk,
				key(t, e, userKey, user), key(t, e, indexKey, user)}
			dump := func() map[string]string {
				out := map[string]string{}
				for _, k := range ks {
					if n, err := e.Client.Exists(ctx, k).Result(); err == nil && n == 1 {
						out[k] = snapshot(t, ctx, e, k)
					}
				}
				return out
			}
			before := dump()
			_, err = m.Append(ctx, user, "c", []Message{msg(User, "c", 1)})
			require.ErrorIs(t, err, keys.ErrCorrupt)
			var ce *keys.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, mk, ce.Key, "the error names the meta key")
			assert.Equal(t, before, dump(), "nothing written")
		})
	}
}

// TestSummaryStoreWrongTypedPendingWritesNothing: a summary store whose
// pending list is of another type (a foreign writer between the read and
// the store) fails with ErrCorrupt naming it before it rewrites the meta
// hash.
func TestSummaryStoreWrongTypedPendingWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e)
	_, err := m.Append(ctx, "u", "c", []Message{msg(User, "a", 1)})
	require.NoError(t, err)
	ck, mk, pk := key(t, e, convKey, "u", "c"), key(t, e, metaKey, "u", "c"), key(t, e, evictedKey, "u", "c")
	epoch, err := e.Client.HGet(ctx, mk, "epoch").Result()
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, pk, "x", time.Minute).Err())
	before := e.Snapshot()
	_, err = m.run.Run(ctx, summaryStoreOp, []string{ck, mk, pk}, 0, 1, "S", 1, "rid", epoch)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	require.Contains(t, err.Error(), pk)
	require.Equal(t, before, e.Snapshot(), "nothing written")
}

// When Append's summarizer call fails before it summarizes (here the
// summary's metadata holds foreign data), Pending keeps the append's own
// count: the evicted messages still wait, and a caller that retries on
// Pending > 0 retries.
func TestAppendPendingWhenSummarizeFails(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e, WithMaxMessages(2), WithSummarizer(func(_ context.Context, prev string, ev []Message) (string, error) {
		return prev + "+", nil
	}))
	for _, text := range []string{"a", "b"} {
		_, err := m.Append(ctx, "u", "c", []Message{msg(User, text, 1)})
		require.NoError(t, err)
	}
	require.NoError(t, e.Client.HSet(ctx, key(t, e, metaKey, "u", "c"), "covered", "x").Err())
	res, err := m.Append(ctx, "u", "c", []Message{msg(User, "c", 1)})
	require.NoError(t, err, "appended all the same")
	require.ErrorIs(t, res.SummaryErr, keys.ErrCorrupt)
	waiting := e.Client.LLen(ctx, key(t, e, evictedKey, "u", "c")).Val()
	require.Positive(t, waiting)
	assert.Equal(t, int(waiting), res.Pending)
}
