package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// ReadView reads what Stats and List read, in one pipeline (one round
// trip, on a cluster too: a queue's keys share a slot), several queues'
// views share one pipeline (Inspector.Views), and it validates as List
// does.
func TestReadView(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "view")
	other := newQ(t, e, "view-other")
	for i, id := range []string{"a", "b", "c", "d"} {
		_, err := q.Enqueue(ctx, execution{WorkflowID: id}, queue.WithID(id), queue.WithJobMaxRetries(0), queue.WithPriority(queue.Priority(i%3-1)))
		require.NoError(t, err)
	}
	_, err := q.Enqueue(ctx, execution{WorkflowID: "later"}, queue.WithID("later"), queue.WithDelay(time.Hour))
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	_, err = q.Nack(ctx, j, errors.New("no"))
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx) // active
	require.NoError(t, err)
	_, err = other.Enqueue(ctx, execution{WorkflowID: "o"})
	require.NoError(t, err)

	states := []queue.State{queue.Pending, queue.Scheduled, queue.Active, queue.Dead}
	want := queue.View[execution]{Jobs: map[queue.State][]queue.Info[execution]{}}
	want.Stats, err = q.Stats(ctx)
	require.NoError(t, err)
	for _, s := range states {
		want.Jobs[s], err = q.List(ctx, s, 0, 10)
		require.NoError(t, err)
		require.NotEmpty(t, want.Jobs[s], s)
	}
	wantOther, err := other.Stats(ctx)
	require.NoError(t, err)

	fresh := e.FreshClient()
	trips := harness.CountTrips(fresh)
	fq, err := queue.New[execution](fresh, "view", queue.WithNamespace(e.NS))
	require.NoError(t, err)
	for range 2 { // the first round may load the scripts
		trips.Reset()
		v, err := fq.ReadView(ctx, 10, states...)
		require.NoError(t, err)
		want.Stats, v.Stats = noLatency(want.Stats), noLatency(v.Stats)
		require.Equal(t, want, v)
	}
	require.Equal(t, int64(1), trips.Total(), "one pipeline")

	// Two queues' stats on one pipeline (Inspector.Views): one round trip
	// per node.
	in, err := queue.NewInspector(fresh, queue.WithNamespace(e.NS))
	require.NoError(t, err)
	trips.Reset()
	vs, err := in.Views(ctx, []string{"view", "view-other"}, 0)
	require.NoError(t, err)
	v1, v2 := vs[0], vs[1]
	require.Equal(t, want.Stats, noLatency(v1.Stats))
	require.Equal(t, noLatency(wantOther), noLatency(v2.Stats))
	require.Empty(t, v1.Jobs)
	require.Equal(t, int64(1), trips.Total(), "one pipeline")

	_, err = q.ReadView(ctx, 0, queue.Pending)
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = q.ReadView(ctx, queue.MaxList+1, queue.Pending)
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = q.ReadView(ctx, 10, queue.Cancelled)
	require.ErrorIs(t, err, queue.ErrInvalid)
}
