package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func TestEndpointAndTagStats(t *testing.T) {
	env := harness.New(t)
	ctx := env.Ctx()
	st, err := cache.NewStore(env.Client, cache.APILayout(), cache.WithNamespace(env.NS))
	require.NoError(t, err)
	load := func(context.Context) ([]byte, error) { return []byte(`{"ok":true}`), nil }
	for _, p := range []string{"h1", "h2"} {
		ref, err := st.Ref("/api/files", "GET", p)
		require.NoError(t, err)
		for i := 0; i < 3; i++ { // a load, then two hits
			_, err = st.Fetch(ctx, ref, load, cache.WithTags("files", "user:42"))
			require.NoError(t, err)
		}
	}
	ref, err := st.Ref("/api/me", "GET", "h3")
	require.NoError(t, err)
	_, err = st.Fetch(ctx, ref, load, cache.WithTags("user:42"))
	require.NoError(t, err)
	require.NoError(t, st.Close()) // flushes the hit counts

	in, err := cache.NewInspector(env.Client, cache.WithNamespace(env.NS))
	require.NoError(t, err)
	stats, err := in.EndpointStats(ctx)
	require.NoError(t, err)
	require.Len(t, stats, 2)
	require.Equal(t, "/api/files", stats[0].Endpoint)
	require.Equal(t, "GET", stats[0].Method)
	require.EqualValues(t, 2, stats[0].Entries)
	require.EqualValues(t, 4, stats[0].Hits)
	require.InDelta(t, 4.0/6.0, stats[0].HitRate(), 1e-9)
	require.Positive(t, stats[0].Bytes)
	require.EqualValues(t, 1, stats[1].Entries)
	require.EqualValues(t, 0, stats[1].Hits)

	tags, err := in.TagStats(ctx)
	require.NoError(t, err)
	require.Equal(t, []cache.TagStat{{Tag: "files", Members: 2}, {Tag: "user:42", Members: 3}}, tags)

	// Overview is both, on one SCAN pipeline and one read pipeline
	// per node.
	c := env.FreshClient()
	trips := harness.CountTrips(c)
	fresh, err := cache.NewInspector(c, cache.WithNamespace(env.NS))
	require.NoError(t, err)
	o, err := fresh.Overview(ctx)
	require.NoError(t, err)
	require.Equal(t, cache.Overview{Endpoints: stats, Tags: tags}, o)
	if env.Backend != harness.Cluster {
		require.Zero(t, trips.Single())
		if env.Backend == harness.Mini { // a server of its own: the SCANs end in one step (a shared server's keyspace may take more)
			require.Equal(t, int64(2), trips.Pipelines())
		}
	}
}

func TestInspectorEmptyAndOtherNamespace(t *testing.T) {
	env := harness.New(t)
	ctx := env.Ctx()
	c, err := cache.New[string](env.Client, cache.WithNamespace(env.NS))
	require.NoError(t, err)
	_, err = c.Get(ctx, cache.NewKey("/api/x", "GET", nil), func(context.Context) (string, error) { return "v", nil }, cache.WithTags("t"))
	require.NoError(t, err)
	require.NoError(t, c.Close())

	// An Inspector under another namespace sees none of it.
	other, err := cache.NewInspector(env.Client, cache.WithNamespace(env.NS.Sub("other:")))
	require.NoError(t, err)
	o, err := other.Overview(ctx)
	require.NoError(t, err)
	require.Empty(t, o.Endpoints)
	require.Empty(t, o.Tags)
	stats, err := other.EndpointStats(ctx)
	require.NoError(t, err)
	require.Empty(t, stats)

	// The options of New that mean nothing to reads are accepted.
	in, err := cache.NewInspector(env.Client, cache.WithNamespace(env.NS), cache.WithLease(time.Second), cache.WithHitFlush(time.Minute))
	require.NoError(t, err)
	o, err = in.Overview(ctx)
	require.NoError(t, err)
	require.Equal(t, []cache.EndpointStat{{Endpoint: "/api/x", Method: "GET", Entries: 1, Bytes: o.Endpoints[0].Bytes}}, o.Endpoints)
	require.Positive(t, o.Endpoints[0].Bytes)
	require.Equal(t, []cache.TagStat{{Tag: "t", Members: 1}}, o.Tags)
}

func TestNewInspectorRefuses(t *testing.T) {
	env := harness.New(t)
	_, err := cache.NewInspector(nil)
	require.ErrorIs(t, err, cache.ErrInvalid)
	_, err = cache.NewInspector(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	require.ErrorIs(t, err, cache.ErrInvalid)
	_, err = cache.NewInspector(env.Client, cache.WithNamespace(keys.Namespace{Prefix: "a{b"}))
	require.ErrorIs(t, err, cache.ErrInvalid)
	_, err = cache.NewInspector(env.Client, cache.WithLease(time.Hour)) // refused by New too
	require.ErrorIs(t, err, cache.ErrInvalid)
}
