package queue_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

func TestNames(t *testing.T) {
	env := harness.New(t)
	in, err := queue.NewInspector(env.Client, queue.WithNamespace(env.NS))
	require.NoError(t, err)
	names, err := in.Names(env.Ctx())
	require.NoError(t, err)
	require.Empty(t, names)
	for _, n := range []string{"b-mail", "a:colon", "c"} {
		q, err := queue.New[string](env.Client, n, queue.WithNamespace(env.NS))
		require.NoError(t, err)
		_, err = q.Enqueue(env.Ctx(), "x")
		require.NoError(t, err)
	}
	names, err = in.Names(env.Ctx())
	require.NoError(t, err)
	require.Equal(t, []string{"a:colon", "b-mail", "c"}, names)

	// Another namespace's inspector sees none of them.
	other, err := queue.NewInspector(env.Client, queue.WithNamespace(keys.Namespace{Prefix: env.NS.Prefix + "other:", NoHashTags: env.NS.NoHashTags}))
	require.NoError(t, err)
	names, err = other.Names(env.Ctx())
	require.NoError(t, err)
	require.Empty(t, names)
}

// Views reads many queues' views in one pipeline, in the order asked,
// payloads as their JSON; it validates names, limit and states before
// sending anything.
func TestInspectorViews(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "iv")
	other := newQ(t, e, "iv-other")
	for _, id := range []string{"a", "b"} {
		_, err := q.Enqueue(ctx, execution{WorkflowID: id}, queue.WithID(id))
		require.NoError(t, err)
	}
	_, err := other.Enqueue(ctx, execution{WorkflowID: "o"}, queue.WithID("o"), queue.WithDelay(time.Hour))
	require.NoError(t, err)
	wantQ, err := q.Stats(ctx)
	require.NoError(t, err)
	wantOther, err := other.Stats(ctx)
	require.NoError(t, err)
	pending, err := q.List(ctx, queue.Pending, 0, 10)
	require.NoError(t, err)
	require.Len(t, pending, 2)

	fresh := e.FreshClient()
	trips := harness.CountTrips(fresh)
	// New's options are accepted; those that mean nothing to reads are
	// ignored.
	in, err := queue.NewInspector(fresh, queue.WithNamespace(e.NS), queue.WithMaxRetries(3))
	require.NoError(t, err)
	for range 2 { // the first round may load the scripts
		trips.Reset()
		vs, err := in.Views(ctx, []string{"iv-other", "iv", "never-used"}, 10, queue.Pending, queue.Scheduled)
		require.NoError(t, err)
		require.Len(t, vs, 3)
		require.Equal(t, noLatency(wantOther), noLatency(vs[0].Stats))
		require.Equal(t, noLatency(wantQ), noLatency(vs[1].Stats))
		require.Equal(t, queue.Stats{}.TotalEnqueued, vs[2].Stats.TotalEnqueued)
		require.Empty(t, vs[2].Jobs[queue.Pending])
		require.Len(t, vs[0].Jobs[queue.Scheduled], 1)
		require.Empty(t, vs[0].Jobs[queue.Pending])
		require.Len(t, vs[1].Jobs[queue.Pending], 2)
		for i, info := range vs[1].Jobs[queue.Pending] {
			require.Equal(t, pending[i].ID, info.ID)
			var p execution
			require.NoError(t, json.Unmarshal(info.Payload, &p))
			require.Equal(t, pending[i].Payload, p)
		}
	}
	if e.Backend != harness.Cluster {
		require.Equal(t, int64(1), trips.Total(), "one pipeline")
	}

	// Stats alone: no state, the limit ignored.
	vs, err := in.Views(ctx, []string{"iv"}, 0)
	require.NoError(t, err)
	require.Equal(t, noLatency(wantQ), noLatency(vs[0].Stats))
	require.Empty(t, vs[0].Jobs)

	vs, err = in.Views(ctx, nil, 10, queue.Pending)
	require.NoError(t, err)
	require.Empty(t, vs)

	trips.Reset()
	for _, bad := range []func() error{
		func() error { _, err := in.Views(ctx, []string{"iv"}, 0, queue.Pending); return err },
		func() error { _, err := in.Views(ctx, []string{"iv"}, queue.MaxList+1, queue.Pending); return err },
		func() error { _, err := in.Views(ctx, []string{"iv"}, 10, queue.Cancelled); return err },
		func() error { _, err := in.Views(ctx, []string{"iv", ""}, 10); return err },
		func() error { _, err := in.Views(ctx, []string{"stats"}, 10); return err },
	} {
		require.ErrorIs(t, bad(), queue.ErrInvalid)
	}
	require.Zero(t, trips.Total(), "nothing sent")
}

func TestNewInspector(t *testing.T) {
	_, err := queue.NewInspector(nil)
	require.ErrorIs(t, err, queue.ErrInvalid)
	noTimeouts := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer noTimeouts.Close()
	_, err = queue.NewInspector(noTimeouts)
	require.ErrorIs(t, err, queue.ErrInvalid)
	ok := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer ok.Close()
	_, err = queue.NewInspector(ok, queue.WithNamespace(keys.Namespace{Prefix: "bad\x00"}))
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = queue.NewInspector(ok, queue.WithMaxRetries(-1)) // refused by New too
	require.ErrorIs(t, err, queue.ErrInvalid)
	require.ErrorContains(t, err, "new inspector")
	_, err = queue.NewInspector(ok, queue.WithDurability(0, time.Second))
	require.ErrorIs(t, err, queue.ErrInvalid)
	in, err := queue.NewInspector(ok)
	require.NoError(t, err)
	require.NotNil(t, in)
}
