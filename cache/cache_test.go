package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func TestGetLoadsOnceThenHits(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithPolicy(SeedPolicy()))
	var l counter
	k := NewKey("/api/v1/files/list", "GET", map[string][]string{"page": {"2"}})
	for i := 0; i < 3; i++ {
		v, err := c.Get(ctx, k, l.load(item{Name: "a", N: 1}))
		require.NoError(t, err)
		assert.Equal(t, item{Name: "a", N: 1}, v)
	}
	assert.EqualValues(t, 1, l.n.Load())
	ref, err := c.ref("t", k)
	require.NoError(t, err)
	raw, err := e.Client.Get(ctx, ref.value).Result()
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"a","n":1}`, raw, "the value's JSON, as the seed stores it")
	pttl := e.Client.PTTL(ctx, ref.value).Val()
	assert.InDelta(t, 30*time.Second, pttl, float64(2*time.Second), "files/list: 30s")
	require.NoError(t, c.Flush(ctx))
	meta := e.Client.HGetAll(ctx, ref.meta).Val()
	assert.Equal(t, "2", meta["hits"])
	assert.Equal(t, "18", meta["size_bytes"])
	assert.NotEmpty(t, meta["created_at"])
	assert.InDelta(t, pttl, e.Client.PTTL(ctx, ref.meta).Val(), float64(time.Second), "meta: same TTL as the entry")
	assert.True(t, keys.SameSlot(ref.value, ref.meta))
	st := c.Stats()
	assert.EqualValues(t, 2, st.Hits)
	assert.EqualValues(t, 1, st.Loads)
}

func TestLoaderErrorsAreNotCached(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newCache[item](t, e)
	k := Key{Endpoint: "/x", Method: "GET"}
	boom := errors.New("boom")
	calls := 0
	for i := 0; i < 3; i++ {
		_, err := c.Get(ctx, k, func(context.Context) (item, error) { calls++; return item{}, boom })
		require.ErrorIs(t, err, boom)
	}
	assert.Equal(t, 3, calls)
	v, err := c.Get(ctx, k, func(context.Context) (item, error) { return item{N: 7}, nil })
	require.NoError(t, err)
	assert.Equal(t, 7, v.N)
}
