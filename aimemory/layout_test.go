package aimemory

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// seedClients returns one client per database of the AI platform's
// layout on the test's server (keys.SeedLayout), or the cluster's one
// client, and removes the test's keys from every database at the end.
func seedClients(t *testing.T, e *harness.Env) *keys.Clients {
	t.Helper()
	if e.Backend == harness.Cluster {
		return keys.SeedLayout().Open(0, true, func(int) redis.UniversalClient { return e.Client })
	}
	return keys.SeedLayout().Open(0, false, func(db int) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: e.Addr, DB: db, ContextTimeoutEnabled: true})
		t.Cleanup(func() {
			ctx := context.Background()
			iter := c.Scan(ctx, 0, e.NS.Match(), 1000).Iterator()
			for iter.Next(ctx) {
				_ = c.Del(ctx, iter.Val()).Err()
			}
			_ = c.Close()
		})
		return c
	})
}

// On the AI platform's layout, a Memory lives in the AI memory database
// (DB 4, with ai:rag:* and ai:response:*), and its caches' tag keys live
// there too, beside the entries they list: an audit of the whole layout
// after every cache path ran (user-scoped and shared entries, an
// erasure's tag generations) reports no problem (issue 33: the tag keys
// were reported "outside DB 1").
func TestSeedLayoutAuditAfterCaches(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	cs := seedClients(t, e)
	m, err := New(cs.For(keys.AIMemory), WithNamespace(e.NS))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })

	for _, user := range []string{"alice", "bob", ""} {
		_, err := m.Response(ctx, Request{Model: "m1", User: user, Messages: []Message{msg(User, "hi", 1)}},
			func(context.Context) (string, error) { return "hello", nil })
		require.NoError(t, err)
		_, err = m.RAG(ctx, Query{Text: "docs", User: user}, func(context.Context) ([]json.RawMessage, error) {
			return []json.RawMessage{json.RawMessage(`"chunk"`)}, nil
		})
		require.NoError(t, err)
	}
	_, err = m.Append(ctx, "alice", "c1", []Message{msg(User, "hi", 1)})
	require.NoError(t, err)
	_, err = m.AddTopics(ctx, "alice", "go")
	require.NoError(t, err)
	erased, err := m.EraseUser(ctx, "bob")
	require.NoError(t, err)
	require.Equal(t, 1, erased.Responses)

	reports, err := harness.Registry(t, Schema(), cache.Schema()).AuditLayout(ctx, cs, keys.AuditOptions{Namespace: e.NS})
	require.NoError(t, err)
	tags := int64(0)
	for _, r := range reports {
		assert.Empty(t, r.Problems(), "DB %d", r.DB)
		for _, s := range r.Patterns {
			if s.Template.Pattern().Owner == "cache" {
				tags += s.Keys
			}
		}
	}
	assert.NotZero(t, tags, "the caches' tag keys were audited")
}
