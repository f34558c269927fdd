package ratelimit_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/ratelimit"
)

func TestBlocksAndConfiguredKeys(t *testing.T) {
	env := harness.New(t)
	lim, err := ratelimit.New(env.Client, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(5)}},
		ratelimit.WithNamespace(env.NS), ratelimit.WithRuntimeConfig())
	require.NoError(t, err)
	// New's options are accepted; those that mean nothing to reads are
	// ignored.
	in, err := ratelimit.NewInspector(env.Client, ratelimit.WithNamespace(env.NS), ratelimit.WithRuntimeConfig())
	require.NoError(t, err)
	blocks, err := in.Blocks(env.Ctx(), 10)
	require.NoError(t, err)
	require.Empty(t, blocks)

	require.NoError(t, lim.Block(env.Ctx(), "b:colon", time.Hour))
	require.NoError(t, lim.Block(env.Ctx(), "a", time.Minute))
	require.NoError(t, lim.SetConfig(env.Ctx(), "key-2", ratelimit.Config{PerMinute: 9}))
	require.NoError(t, lim.SetConfig(env.Ctx(), "key-1", ratelimit.Config{Burst: 0, PerHour: 9}))

	blocks, err = in.Blocks(env.Ctx(), 10)
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	require.Equal(t, "a", blocks[0].ID, "soonest lapse first")
	require.Equal(t, "b:colon", blocks[1].ID)
	require.True(t, blocks[0].Remaining > 0 && blocks[0].Remaining <= time.Minute, blocks[0].Remaining)
	require.True(t, blocks[1].Remaining > time.Minute && blocks[1].Remaining <= time.Hour, blocks[1].Remaining)

	blocks, err = in.Blocks(env.Ctx(), 1)
	require.NoError(t, err)
	require.Len(t, blocks, 1)

	ids, err := in.ConfiguredKeys(env.Ctx(), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"key-1", "key-2"}, ids)

	// Overview is both, on one SCAN pipeline and one read pipeline per
	// node.
	c := env.FreshClient()
	trips := harness.CountTrips(c)
	in2, err := ratelimit.NewInspector(c, ratelimit.WithNamespace(env.NS))
	require.NoError(t, err)
	o, err := in2.Overview(env.Ctx(), 10)
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
	o, err = in2.Overview(env.Ctx(), 1)
	require.NoError(t, err)
	require.Len(t, o.Blocks, 1)
	require.Equal(t, []string{"key-1"}, o.Configured)

	_, err = in.Blocks(env.Ctx(), 0)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	_, err = in.Overview(env.Ctx(), 0)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	_, err = in.ConfiguredKeys(env.Ctx(), 10001)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)

	// Another namespace's inspector sees none of it.
	other, err := ratelimit.NewInspector(env.Client, ratelimit.WithNamespace(keys.Namespace{Prefix: env.NS.Prefix + "other:", NoHashTags: env.NS.NoHashTags}))
	require.NoError(t, err)
	o, err = other.Overview(env.Ctx(), 10)
	require.NoError(t, err)
	require.Empty(t, o.Blocks)
	require.Empty(t, o.Configured)
}

func TestNewInspector(t *testing.T) {
	_, err := ratelimit.NewInspector(nil)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	noTimeouts := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer noTimeouts.Close()
	_, err = ratelimit.NewInspector(noTimeouts)
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	ok := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer ok.Close()
	_, err = ratelimit.NewInspector(ok, ratelimit.WithNamespace(keys.Namespace{Prefix: "bad\x00"}))
	require.ErrorIs(t, err, ratelimit.ErrInvalid)
	in, err := ratelimit.NewInspector(ok)
	require.NoError(t, err)
	require.NotNil(t, in)
}
