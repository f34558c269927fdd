package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/lock"
)

func TestAdminReads(t *testing.T) {
	env := harness.New(t)
	ctx := env.Ctx()
	c, err := lock.New(env.Client, lock.WithNamespace(env.NS), lock.WithOwner("worker-1"))
	require.NoError(t, err)

	held, err := lock.Held(ctx, env.Client, env.NS, 10)
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
	iv, err := c.Interval("nightly", time.Hour)
	require.NoError(t, err)
	ran, err := iv.Do(ctx, func(context.Context) error { return nil })
	require.NoError(t, err)
	require.True(t, ran)

	held, err = lock.Held(ctx, env.Client, env.NS, 10)
	require.NoError(t, err)
	var got []string
	for _, h := range held {
		got = append(got, h.ResourceType+"/"+h.ResourceID)
		require.Equal(t, "worker-1", h.OwnerLabel)
		require.Positive(t, h.Remaining)
		require.LessOrEqual(t, h.Remaining, h.Lease)
	}
	require.Equal(t, []string{"file/a.pdf", "report/r:1"}, got, "soonest expiry first")

	sems, err := lock.Semaphores(ctx, env.Client, env.NS, 10)
	require.NoError(t, err)
	require.Len(t, sems, 1)
	require.Equal(t, "gpu", sems[0].ResourceType)
	require.Len(t, sems[0].Permits, 2)
	require.Equal(t, "worker-1", sems[0].Permits[0].OwnerLabel)

	runs, err := lock.LastRuns(ctx, env.Client, env.NS, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, "nightly", runs[0].Job)
	last, err := iv.LastRun(ctx)
	require.NoError(t, err)
	require.True(t, last.Equal(runs[0].LastRun), "%v vs %v", last, runs[0].LastRun)

	// ReadOverview is the three together, on one SCAN pipeline and one
	// read pipeline per node.
	c2 := env.FreshClient()
	trips := harness.CountTrips(c2)
	o, err := lock.ReadOverview(ctx, c2, env.NS, 10)
	require.NoError(t, err)
	require.Equal(t, lock.Overview{Held: o.Held, Semaphores: sems, LastRuns: runs}, o)
	require.Len(t, o.Held, 2)
	if env.Backend != harness.Cluster {
		require.Zero(t, trips.Single())
		if env.Backend == harness.Mini { // a server of its own: the SCANs end in one step (a shared server's keyspace may take more)
			require.Equal(t, int64(2), trips.Pipelines())
		}
	}
	o, err = lock.ReadOverview(ctx, c2, env.NS, 1)
	require.NoError(t, err)
	require.Len(t, o.Held, 1)

	_, err = lock.Held(ctx, env.Client, env.NS, 0)
	require.ErrorIs(t, err, lock.ErrInvalid)
	_, err = lock.ReadOverview(ctx, env.Client, env.NS, 0)
	require.ErrorIs(t, err, lock.ErrInvalid)
}
