package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// TestCancelFlow: cancelling a pending child counts as a dead child for
// its parent in the same step (the parent is dead-lettered, or runs after
// the others, as its flow says); cancelling a waiting parent reports
// Waiting and lets its children run on; nothing of a flow stays in the
// flows hash.
func TestCancelFlow(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cxlflow")
	flows := e.NS.Prefix + "queue:{cxlflow}:flows"

	// a cancelled child fails its parent at once
	p, c := flowItems("a", 2)
	pid, cids, err := q.EnqueueFlow(ctx, p, c, queue.FailParent)
	require.NoError(t, err)
	s, err := q.Cancel(ctx, cids[0])
	require.NoError(t, err)
	require.Equal(t, queue.Pending, s)
	dead, err := q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1, "the parent, before the other child runs")
	require.Equal(t, pid, dead[0].ID)
	require.Contains(t, dead[0].LastError, cids[0])
	require.Equal(t, []string{cids[1]}, drainAck(t, q))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.TotalCancelled)
	require.EqualValues(t, 1, st.TotalDead)

	// a cancelled child, ignored: the parent runs after the other
	p, c = flowItems("b", 2)
	pid, cids, err = q.EnqueueFlow(ctx, p, c, queue.IgnoreDead)
	require.NoError(t, err)
	_, err = q.Cancel(ctx, cids[1])
	require.NoError(t, err)
	require.Equal(t, []string{cids[0], pid}, drainAck(t, q))

	// the last child cancelled: the parent is ready at once
	p, c = flowItems("c", 1)
	pid, cids, err = q.EnqueueFlow(ctx, p, c, queue.IgnoreDead)
	require.NoError(t, err)
	_, err = q.Cancel(ctx, cids[0])
	require.NoError(t, err)
	in, err := q.Peek(ctx, pid)
	require.NoError(t, err)
	require.Equal(t, queue.Pending, in.State)
	require.Equal(t, []string{pid}, drainAck(t, q))

	// a cancelled waiting parent: its children run on
	p, c = flowItems("d", 2)
	pid, cids, err = q.EnqueueFlow(ctx, p, c, queue.FailParent)
	require.NoError(t, err)
	s, err = q.Cancel(ctx, pid)
	require.NoError(t, err)
	require.Equal(t, queue.Waiting, s)
	_, err = q.Peek(ctx, pid)
	require.ErrorIs(t, err, queue.ErrNotFound)
	require.ElementsMatch(t, cids, drainAck(t, q))
	s, err = q.Cancel(ctx, pid)
	require.ErrorIs(t, err, queue.ErrNotFound, "state %q", s)

	x, err := e.Client.Exists(ctx, flows).Result()
	require.NoError(t, err)
	require.Zero(t, x, "the flows hash is empty")
	dead, err = q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1, "only the first flow's parent")
}

// TestProgressGoesWithTheJob: a job's progress field goes when the job
// leaves the queue without being settled: dead-lettered by lease expiry,
// deleted or purged while in flight.
func TestProgressGoesWithTheJob(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "progone", queue.WithLease(100*time.Millisecond))
	progress := e.NS.Prefix + "queue:{progone}:progress"
	leaseWithProgress := func() *queue.Job[execution] {
		_, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithJobMaxRetries(0))
		require.NoError(t, err)
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		require.NoError(t, j.SetProgress(ctx, map[string]int{"done": 1}))
		n, err := e.Client.HLen(ctx, progress).Result()
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		return j
	}
	gone := func(what string) {
		t.Helper()
		n, err := e.Client.Exists(ctx, progress).Result()
		require.NoError(t, err)
		require.Zero(t, n, "progress left after %s", what)
	}

	// dead-lettered when its lease expires with no retry left
	j := leaseWithProgress()
	e.Advance(150 * time.Millisecond)
	_, err := q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	dead, err := q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Equal(t, j.ID, dead[0].ID)
	gone("a dead letter")

	j = leaseWithProgress()
	require.NoError(t, q.Delete(ctx, j.ID))
	gone("Delete")

	leaseWithProgress()
	n, err := q.Purge(ctx, queue.Active, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	gone("Purge")
}

// TestEventsWrongTypeWritesNothing: with WithEvents, an events key of
// another type fails each writing call with ErrCorrupt naming it, before
// anything is written.
func TestEventsWrongTypeWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "evbad", queue.WithEvents(100))
	events := e.NS.Prefix + "queue:{evbad}:events"
	jobs := e.NS.Prefix + "queue:{evbad}:jobs"
	// a job in flight, leased before the stream went bad
	_, err := q.Enqueue(ctx, execution{WorkflowID: "w"})
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, execution{WorkflowID: "pending"}, queue.WithID("pending"))
	require.NoError(t, err)
	require.NoError(t, e.Client.Del(ctx, events).Err())
	require.NoError(t, e.Client.Set(ctx, events, "x", 0).Err())

	corrupt := func(what string, err error) {
		t.Helper()
		require.ErrorIs(t, err, keys.ErrCorrupt, what)
		require.Contains(t, err.Error(), events, what)
	}
	_, err = q.Enqueue(ctx, execution{WorkflowID: "more"})
	corrupt("Enqueue", err)
	p, c := flowItems("f", 2)
	_, _, err = q.EnqueueFlow(ctx, p, c, queue.FailParent)
	corrupt("EnqueueFlow", err)
	corrupt("SetProgress", j.SetProgress(ctx, 1))
	corrupt("Ack", q.Ack(ctx, j))
	_, err = q.Cancel(ctx, "pending")
	corrupt("Cancel", err)
	_, err = q.TryDequeue(ctx)
	corrupt("TryDequeue", err)

	n, err := e.Client.HLen(ctx, jobs).Result()
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "the two jobs from before, nothing more, nothing less")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.InFlight)
	require.EqualValues(t, 1, st.Pending())
	require.EqualValues(t, 2, st.TotalEnqueued)
	require.Zero(t, st.TotalProcessed)
	require.Zero(t, st.TotalCancelled)
	ex, err := e.Client.Exists(ctx, e.NS.Prefix+"queue:{evbad}:progress").Result()
	require.NoError(t, err)
	require.Zero(t, ex)
}

// TestCancelChildWrongTypedLevelWritesNothing: cancelling a child can make
// its parent ready at another priority level; a level key of another type
// fails the Cancel with ErrCorrupt naming it before anything is written
// (the child stays pending, the flow and the counters as they were).
func TestCancelChildWrongTypedLevelWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cxllvl")
	low := e.NS.Prefix + "queue:{cxllvl}:priority:low"
	flows := e.NS.Prefix + "queue:{cxllvl}:flows"
	p := queue.Item[execution]{Payload: execution{WorkflowID: "parent"}, Options: []queue.EnqueueOption{queue.WithPriority(queue.Low)}}
	c := []queue.Item[execution]{{Payload: execution{WorkflowID: "child"}, Options: []queue.EnqueueOption{queue.WithPriority(queue.High)}}}
	_, cids, err := q.EnqueueFlow(ctx, p, c, queue.IgnoreDead)
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, low, "x", 0).Err())
	before, err := e.Client.HGetAll(ctx, flows).Result()
	require.NoError(t, err)

	_, err = q.Cancel(ctx, cids[0])
	require.ErrorIs(t, err, keys.ErrCorrupt)
	require.Contains(t, err.Error(), low)

	after, err := e.Client.HGetAll(ctx, flows).Result()
	require.NoError(t, err)
	require.Equal(t, before, after, "the flow as it was")
	j, err := q.Peek(ctx, cids[0])
	require.NoError(t, err)
	require.Equal(t, queue.Pending, j.State)
	require.NoError(t, e.Client.Del(ctx, low).Err())
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.TotalCancelled)

	// repaired, the Cancel goes through and the parent runs
	_, err = q.Cancel(ctx, cids[0])
	require.NoError(t, err)
	require.Len(t, drainAck(t, q), 1)
}
