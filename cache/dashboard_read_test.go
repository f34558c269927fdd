package cache_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/internal/harness"
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
			_, err = st.Fetch(ctx, ref, load, cache.Tags("files", "user:42"))
			require.NoError(t, err)
		}
	}
	ref, err := st.Ref("/api/me", "GET", "h3")
	require.NoError(t, err)
	_, err = st.Fetch(ctx, ref, load, cache.Tags("user:42"))
	require.NoError(t, err)
	require.NoError(t, st.Close()) // flushes the hit counts

	stats, err := cache.EndpointStats(ctx, env.Client, env.NS)
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

	tags, err := cache.TagStats(ctx, env.Client, env.NS)
	require.NoError(t, err)
	require.Equal(t, []cache.TagStat{{Tag: "files", Members: 2}, {Tag: "user:42", Members: 3}}, tags)

	// ReadOverview is both, on one SCAN pipeline and one read pipeline
	// per node.
	c := env.FreshClient()
	trips := harness.CountTrips(c)
	o, err := cache.ReadOverview(ctx, c, env.NS)
	require.NoError(t, err)
	require.Equal(t, cache.Overview{Endpoints: stats, Tags: tags}, o)
	if env.Backend != harness.Cluster {
		require.Zero(t, trips.Single())
		if env.Backend == harness.Mini { // a server of its own: the SCANs end in one step (a shared server's keyspace may take more)
			require.Equal(t, int64(2), trips.Pipelines())
		}
	}
}
