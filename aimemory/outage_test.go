package aimemory_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// An unreachable server is never reported as a business answer: every
// call fails with an error, never a budget refusal, invalid
// input or corruption, and the caches never call the model or the
// retriever because of it (an outage is not a miss).
func TestOutagesAreNotOutcomes(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	m, err := aimemory.New(pc, aimemory.WithNamespace(e.NS), aimemory.WithDailyBudget(1000),
		aimemory.WithSummarizer(func(context.Context, string, []aimemory.Message) (string, error) { return "s", nil }))
	require.NoError(t, err)
	defer m.Close()
	msg := []aimemory.Message{{Role: aimemory.User, Content: "hello", Tokens: 2}}
	_, err = m.Append(ctx, "u1", "c1", msg)
	require.NoError(t, err)

	p.Stall()
	defer p.Resume()
	var loads atomic.Int64
	sentinels := []error{aimemory.ErrBudgetExceeded, aimemory.ErrBudgetTooSmall, aimemory.ErrInvalid, aimemory.ErrStreamEnded, keys.ErrCorrupt}
	for name, op := range map[string]func(ctx context.Context) error{
		"append":      func(ctx context.Context) error { _, err := m.Append(ctx, "u1", "c1", msg); return err },
		"window":      func(ctx context.Context) error { _, err := m.Window(ctx, "u1", "c1"); return err },
		"user":        func(ctx context.Context) error { _, err := m.User(ctx, "u1"); return err },
		"topics":      func(ctx context.Context) error { _, err := m.AddTopics(ctx, "u1", "redis"); return err },
		"preferences": func(ctx context.Context) error { return m.SetPreferences(ctx, "u1", json.RawMessage(`{"lang":"en"}`)) },
		"summarize":   func(ctx context.Context) error { _, err := m.Summarize(ctx, "u1", "c1"); return err },
		"delete":      func(ctx context.Context) error { return m.DeleteConversation(ctx, "u1", "c1") },
		"erase":       func(ctx context.Context) error { _, err := m.EraseUser(ctx, "u1"); return err },
		"response": func(ctx context.Context) error {
			_, err := m.Response(ctx, aimemory.Request{Model: "m", Messages: msg}, func(context.Context) (string, error) {
				loads.Add(1)
				return "hi", nil
			})
			return err
		},
		"rag": func(ctx context.Context) error {
			_, err := m.RAG(ctx, aimemory.Query{Text: "redis"}, func(context.Context) ([]json.RawMessage, error) {
				loads.Add(1)
				return nil, nil
			})
			return err
		},
	} {
		sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := op(sctx)
		cancel()
		require.Error(t, err, name)
		for _, s := range sentinels {
			assert.NotErrorIs(t, err, s, "%s: %v", name, err)
		}
	}
	assert.Zero(t, loads.Load(), "an outage is not a cache miss")
}
