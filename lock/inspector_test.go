package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
)

func TestAdminReads(t *testing.T) {
	env := harness.New(t)
	ctx := env.Ctx()
	c, err := lock.New(env.Client, lock.WithNamespace(env.NS), lock.WithOwner("worker-1"))
	require.NoError(t, err)
	// The options of New are accepted; those that mean nothing to reads
	// are ignored.
	in, err := lock.NewInspector(env.Client, lock.WithNamespace(env.NS), lock.WithOwner("worker-1"))
	require.NoError(t, err)

	held, err := in.Held(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, held)

	_, err = c.TryAcquire(ctx, lock.File, "a.pdf", 30*time.Second)
	require.NoError(t, err)
	_, err = c.TryAcquire(ctx, "report", "r:1", 2*time.Minute)
	require.NoError(t, err)
	sem, err := c.Semaphore("gpu", "pool", 3)
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		_, err = sem.TryAcquire(ctx, time.Minute)
		require.NoError(t, err)
	}
	iv, err := c.Interval("nightly", time.Hour, 0)
	require.NoError(t, err)
	ran, err := iv.Do(ctx, func(context.Context) error { return nil })
	require.NoError(t, err)
	require.True(t, ran)

	held, err = in.Held(ctx, 10)
	require.NoError(t, err)
	var got []string
	for _, h := range held {
		got = append(got, h.ResourceType+"/"+h.ResourceID)
		require.Equal(t, "worker-1", h.OwnerLabel)
		require.Positive(t, h.Remaining)
		require.LessOrEqual(t, h.Remaining, h.Lease)
	}
	require.Equal(t, []string{"file/a.pdf", "report/r:1"}, got, "soonest expiry first")

	sems, err := in.Semaphores(ctx, 10)
	require.NoError(t, err)
	require.Len(t, sems, 1)
	require.Equal(t, "gpu", sems[0].ResourceType)
	require.Len(t, sems[0].Permits, 2)
	require.Equal(t, "worker-1", sems[0].Permits[0].OwnerLabel)

	runs, err := in.LastRuns(ctx, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, "nightly", runs[0].Job)
	last, err := iv.LastRun(ctx)
	require.NoError(t, err)
	require.True(t, last.Equal(runs[0].LastRun), "%v vs %v", last, runs[0].LastRun)

	// Overview is the three together, on one SCAN pipeline and one read
	// pipeline per node.
	c2 := env.FreshClient()
	trips := harness.CountTrips(c2)
	in2, err := lock.NewInspector(c2, lock.WithNamespace(env.NS))
	require.NoError(t, err)
	o, err := in2.Overview(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, lock.Overview{Held: o.Held, Semaphores: sems, LastRuns: runs}, o)
	require.Len(t, o.Held, 2)
	if env.Backend != harness.Cluster {
		require.Zero(t, trips.Single())
		if env.Backend == harness.Mini { // a server of its own: the SCANs end in one step (a shared server's keyspace may take more)
			require.Equal(t, int64(2), trips.Pipelines())
		}
	}
	o, err = in2.Overview(ctx, 1)
	require.NoError(t, err)
	require.Len(t, o.Held, 1)

	_, err = in.Held(ctx, 0)
	require.ErrorIs(t, err, lock.ErrInvalid)
	_, err = in.Overview(ctx, 0)
	require.ErrorIs(t, err, lock.ErrInvalid)
	_, err = in.Semaphores(ctx, 10001)
	require.ErrorIs(t, err, lock.ErrInvalid)
	_, err = in.LastRuns(ctx, 0)
	require.ErrorIs(t, err, lock.ErrInvalid)

	// Another namespace's inspector sees none of it.
	other, err := lock.NewInspector(env.Client, lock.WithNamespace(keys.Namespace{Prefix: env.NS.Prefix + "other:", NoHashTags: env.NS.NoHashTags}))
	require.NoError(t, err)
	o, err = other.Overview(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, o.Held)
	require.Empty(t, o.Semaphores)
	require.Empty(t, o.LastRuns)
}

func TestNewInspector(t *testing.T) {
	_, err := lock.NewInspector(nil)
	require.ErrorIs(t, err, lock.ErrInvalid)
	noTimeouts := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer noTimeouts.Close()
	_, err = lock.NewInspector(noTimeouts)
	require.ErrorIs(t, err, lock.ErrInvalid)
	ok := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer ok.Close()
	_, err = lock.NewInspector(ok, lock.WithNamespace(keys.Namespace{Prefix: "bad prefix\x00"}))
	require.ErrorIs(t, err, lock.ErrInvalid)
	_, err = lock.NewInspector(ok, lock.WithMaxTTL(0)) // refused by New too
	require.ErrorIs(t, err, lock.ErrInvalid)
	require.ErrorContains(t, err, "new inspector")
	_, err = lock.NewInspector(ok, lock.WithDurability(0, time.Second))
	require.ErrorIs(t, err, lock.ErrInvalid)
	in, err := lock.NewInspector(ok)
	require.NoError(t, err)
	require.NotNil(t, in)
}
