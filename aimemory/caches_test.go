package aimemory

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func TestResponseCache(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e)
	var calls atomic.Int64
	gen := func(context.Context) (string, error) { calls.Add(1); return "Paris", nil }
	req := Request{Model: "gpt-4o", Messages: []Message{msg(System, "be brief", 3), msg(User, "capital of France?", 5)},
		Params: map[string]any{"temperature": 0.2, "max_tokens": 50}}

	r, err := m.Response(ctx, req, gen)
	require.NoError(t, err)
	assert.Equal(t, "Paris", r.Text)
	assert.Equal(t, cache.Loaded, r.Status)
	h, err := req.Hash()
	require.NoError(t, err)
	assert.Len(t, h, 64)
	assert.Equal(t, key(t, e, responseKey, "gpt-4o", h), r.Key)
	v, err := e.Client.Get(ctx, r.Key).Result()
	require.NoError(t, err)
	assert.Equal(t, "Paris", v, "the seed's STRING: the response text")
	ttl := e.Client.PTTL(ctx, r.Key).Val()
	assert.InDelta(t, float64(defaultResponseTTL), float64(ttl), float64(5*time.Second))

	// The same request, with other timestamps, token counts and map order.
	same := Request{Model: "gpt-4o", Messages: []Message{{Role: System, Content: "be brief", Timestamp: time.Now()}, msg(User, "capital of France?", 9)},
		Params: map[string]any{"max_tokens": 50, "temperature": 0.2}}
	r, err = m.Response(ctx, same, gen)
	require.NoError(t, err)
	assert.Equal(t, cache.Hit, r.Status)
	assert.Equal(t, int64(1), calls.Load())

	// Scoped to a user: another entry, which no other user gets.
	scoped := req
	scoped.User = "u1"
	r, err = m.Response(ctx, scoped, gen)
	require.NoError(t, err)
	assert.Equal(t, cache.Loaded, r.Status)
	assert.Equal(t, int64(2), calls.Load())

	r, err = m.Response(ctx, req, gen, WithoutCache())
	require.NoError(t, err)
	assert.Equal(t, "", r.Key)
	assert.Equal(t, int64(3), calls.Load())
	r, err = m.Response(ctx, req, gen, WithRefresh(), WithCacheTTL(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, cache.Loaded, r.Status)
	assert.Equal(t, int64(4), calls.Load())
	assert.LessOrEqual(t, e.Client.PTTL(ctx, r.Key).Val(), time.Minute)

	boom := assert.AnError
	_, err = m.Response(ctx, Request{Model: "m", Messages: []Message{msg(User, "fails", 1)}},
		func(context.Context) (string, error) { return "", boom })
	require.ErrorIs(t, err, boom, "generate's error, never cached")
	e.RequireTTLs(nil)

	// generate's own text that is not UTF-8 is refused as its input,
	// never stored, never reported as data in Redis
	bad := Request{Model: "m", Messages: []Message{msg(User, "cut mid-character", 1)}}
	hb, err := bad.Hash()
	require.NoError(t, err)
	for _, opts := range [][]CacheOption{nil, {WithoutCache()}} {
		_, err = m.Response(ctx, bad, func(context.Context) (string, error) { return "caf\xc3", nil }, opts...)
		require.ErrorIs(t, err, ErrInvalid)
		assert.NotErrorIs(t, err, keys.ErrCorrupt)
		assert.Zero(t, e.Client.Exists(ctx, key(t, e, responseKey, "m", hb)).Val())
	}
}

func TestRAGCache(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	m := newMemory(t, e)
	var calls atomic.Int64
	retrieve := func(context.Context) ([]json.RawMessage, error) {
		calls.Add(1)
		return []json.RawMessage{json.RawMessage(`{"doc":"a","text":"chunk 1"}`), json.RawMessage(`"chunk 2"`)}, nil
	}
	q := Query{Text: "how do refunds work?", Params: map[string]any{"top_k": 2}}
	for i, want := range []cache.Status{cache.Loaded, cache.Hit} {
		r, err := m.RAG(ctx, q, retrieve)
		require.NoError(t, err)
		assert.Equal(t, want, r.Status, "call %d", i)
		require.Len(t, r.Chunks, 2)
		assert.JSONEq(t, `"chunk 2"`, string(r.Chunks[1]))
	}
	assert.Equal(t, int64(1), calls.Load())
	h, err := q.Hash()
	require.NoError(t, err)
	v, err := e.Client.Get(ctx, key(t, e, ragKey, h)).Result()
	require.NoError(t, err)
	assert.JSONEq(t, `[{"doc":"a","text":"chunk 1"},"chunk 2"]`, v, "the seed's JSON array of chunks")
	ttl := e.Client.PTTL(ctx, key(t, e, ragKey, h)).Val()
	assert.InDelta(t, float64(defaultRAGTTL), float64(ttl), float64(5*time.Second))

	r, err := m.RAG(ctx, Query{Text: "nothing"}, func(context.Context) ([]json.RawMessage, error) { return nil, nil })
	require.NoError(t, err)
	assert.Empty(t, r.Chunks)
	_, err = m.RAG(ctx, Query{Text: "bad"}, func(context.Context) ([]json.RawMessage, error) {
		return []json.RawMessage{json.RawMessage(`{oops`)}, nil
	})
	require.ErrorIs(t, err, ErrInvalid, "a chunk that is not JSON")
}

// Many goroutines of two Memory instances (two processes' worth: each
// has its own cache.Store) miss one response at once: one generate runs.
func TestResponseSingleLoadAcrossInstances(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	a, b := newMemory(t, e), newMemory(t, e)
	var calls atomic.Int64
	gen := func(context.Context) (string, error) {
		calls.Add(1)
		time.Sleep(200 * time.Millisecond)
		return "once", nil
	}
	req := Request{Model: "m", Messages: []Message{msg(User, "popular question", 3)}}
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		m := a
		if i%2 == 1 {
			m = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.Response(ctx, req, gen)
			assert.NoError(t, err)
			assert.Equal(t, "once", r.Text)
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1), calls.Load())
}
