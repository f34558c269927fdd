package ratelimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/ratelimit"
)

func TestBlocksAndConfiguredKeys(t *testing.T) {
	env := harness.New(t)
	lim, err := ratelimit.New(env.Client, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(5)}},
		ratelimit.WithNamespace(env.NS), ratelimit.WithRuntimeConfig())
	require.NoError(t, err)
	blocks, err := ratelimit.Blocks(env.Ctx(), env.Client, env.NS, 10)
	require.NoError(t, err)
	require.Empty(t, blocks)

	require.NoError(t, lim.Block(env.Ctx(), "b:colon", time.Hour))
	require.NoError(t, lim.Block(env.Ctx(), "a", time.Minute))
	require.NoError(t, lim.SetConfig(env.Ctx(), "key-2", ratelimit.Config{PerMinute: 9}))
	require.NoError(t, lim.SetConfig(env.Ctx(), "key-1", ratelimit.Config{Burst: 0, PerHour: 9}))

	blocks, err = ratelimit.Blocks(env.Ctx(), env.Client, env.NS, 10)
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	require.Equal(t, "a", blocks[0].ID, "soonest lapse first")
	require.Equal(t, "b:colon", blocks[1].ID)
	require.True(t, blocks[0].Remaining > 0 && blocks[0].Remaining <= time.Minute, blocks[0].Remaining)
	require.True(t, blocks[1].Remaining > time.Minute && blocks[1].Remaining <= time.Hour, blocks[1].Remaining)

	blocks, err = ratelimit.Blocks(env.Ctx(), env.Client, env.NS, 1)
	require.NoError(t, err)
	require.Len(t, blocks, 1)

	ids, err := ratelimit.ConfiguredKeys(env.Ctx(), env.Client, env.NS, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"key-1", "key-2"}, ids)

	// ReadOverview is both, on one SCAN pipeline and one read pipeline
	// per node.
	c := env.FreshClient()
	trips := harness.CountTrips(c)
	o, err := ratelimit.ReadOverview(env.Ctx(), c, env.NS, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"key-1", "key-2"}, o.Configured)
	require.Len(t, o.Blocks, 2)
	require.Equal(t, []string{"a", "b:colon"}, []string{o.Blocks[0].ID, o.Blocks[1].ID})
	if env.Backend != harness.Cluster {
		require.Zero(t, trips.Single())
		if env.Backend == harness.Mini { // a server of its own: the SCANs end in one step (a shared server's keyspace may take more)
			require.Equal(t, int64(2), trips.Pipelines())
		}
	}
	o, err = ratelimit.ReadOverview(env.Ctx(), c, env.NS, 1)
	require.NoError(t, err)
	require.Len(t, o.Blocks, 1)
	require.Equal(t, []string{"key-1"}, o.Configured)

	_, err = ratelimit.Blocks(env.Ctx(), env.Client, env.NS, 0)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	_, err = ratelimit.ReadOverview(env.Ctx(), env.Client, env.NS, 0)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
}
