package cache

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// A loader sets the freshness of what it returns (LoadTTL) or declines
// to store it (NoStore), as go-redis/cache's loaders do with their Item;
// in Get, Fetch and FetchMany.
func TestLoaderSetsTTLOrDeclinesStorage(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(2 * time.Second)
	ctx := e.Ctx()
	c := newCache[item](t, e, WithBeta(0), WithPolicy(Policy{Default: time.Hour}))
	s := c.Store()
	var loads int
	short := func(ctx context.Context) (item, error) {
		loads++
		require.NoError(t, LoadTTL(ctx, time.Second))
		return item{N: loads}, nil
	}
	k := NewKey("/ttl", "GET", nil)
	v, res, err := c.get(ctx, "get", k, short, nil)
	require.NoError(t, err)
	assert.Equal(t, time.Second, res.TTL, "the loader's TTL, not the policy's hour")
	assert.True(t, res.Stored)
	ref, err := c.ref("test", k)
	require.NoError(t, err)
	pttl := e.Client.PTTL(ctx, ref.value).Val()
	assert.True(t, pttl > 0 && pttl <= time.Second, "stored for the loader's TTL: %v", pttl)
	_, res, err = c.get(ctx, "get", k, short, nil)
	require.NoError(t, err)
	assert.Equal(t, Hit, res.Status)
	e.Advance(1100 * time.Millisecond)
	v, res, err = c.get(ctx, "get", k, short, nil)
	require.NoError(t, err)
	assert.Equal(t, Loaded, res.Status, "expired after the loader's TTL")
	assert.Equal(t, 2, v.N)

	// NoStore: every caller loads; nothing is written but the short marker.
	nk := NewKey("/nostore", "GET", nil)
	n := 0
	decline := func(ctx context.Context) (item, error) {
		n++
		_, bounded := ctx.Deadline()
		assert.True(t, bounded, "load %d runs under the load timeout", n)
		require.NoError(t, NoStore(ctx))
		return item{N: n}, nil
	}
	for i := 1; i <= 2; i++ { // a caller's context without a deadline
		v, res, err := c.get(context.Background(), "get", nk, decline, nil)
		require.NoError(t, err)
		assert.Equal(t, i, v.N)
		assert.False(t, res.Stored)
	}
	nref, err := c.ref("test", nk)
	require.NoError(t, err)
	assert.Zero(t, e.Client.Exists(ctx, nref.value).Val(), "no value stored")

	// Store.Fetch and FetchMany.
	fr, err := s.Ref("/fetch", "GET", "h1")
	require.NoError(t, err)
	fres, err := s.Fetch(ctx, fr, func(ctx context.Context) ([]byte, error) {
		require.NoError(t, LoadTTL(ctx, 2*time.Second))
		return []byte("x"), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, fres.TTL)
	m1, err := s.Ref("/many", "GET", "h1")
	require.NoError(t, err)
	m2, err := s.Ref("/many", "GET", "h2")
	require.NoError(t, err)
	many := func(ttl bool) manyLoader {
		return func(ctx context.Context, missing []Ref) (map[Ref][]byte, error) {
			if ttl {
				require.NoError(t, LoadTTL(ctx, 3*time.Second))
			} else {
				require.NoError(t, NoStore(ctx))
			}
			out := map[Ref][]byte{}
			for _, r := range missing {
				out[r] = []byte("m")
			}
			return out, nil
		}
	}
	mres, err := s.FetchMany(ctx, []Ref{m1}, many(true))
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, mres[0].TTL)
	assert.True(t, mres[0].Stored)
	mres, err = s.FetchMany(ctx, []Ref{m2}, many(false))
	require.NoError(t, err)
	assert.Equal(t, "m", string(mres[0].Value))
	assert.False(t, mres[0].Stored)
	assert.Zero(t, e.Client.Exists(ctx, m2.value).Val(), "no value stored")

	// Bad input.
	require.ErrorIs(t, LoadTTL(ctx, time.Second), ErrInvalid, "not a loader's context")
	require.ErrorIs(t, NoStore(ctx), ErrInvalid)
	_, err = c.Get(ctx, NewKey("/bad", "GET", nil), func(ctx context.Context) (item, error) {
		assert.ErrorIs(t, LoadTTL(ctx, 0), ErrInvalid)
		assert.ErrorIs(t, LoadTTL(ctx, defaultMaxTTL+time.Second), ErrInvalid)
		return item{}, nil
	})
	require.NoError(t, err)
}
