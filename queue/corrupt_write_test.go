package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// Each test below makes one key of the wrong type, then makes a call
// whose script reads it only after its first write on the old code: the
// call must fail with keys.ErrCorrupt naming the key, and write nothing.

// requireCorruptNoWrite runs call and requires a keys.ErrCorrupt error
// that names key, with every key of the namespace as it was.
func requireCorruptNoWrite(t *testing.T, e *harness.Env, key string, call func() error) {
	t.Helper()
	before := e.Snapshot()
	err := call()
	require.Error(t, err)
	require.True(t, errors.Is(err, keys.ErrCorrupt), "not ErrCorrupt: %v", err)
	require.ErrorContains(t, err, key)
	require.Equal(t, before, e.Snapshot(), "the call wrote")
}

// TestNackFlowsWrongTypeWritesNothing: a Nack that dead-letters reads
// the flows hash's type before its first write.
func TestNackFlowsWrongTypeWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwnack", queue.WithMaxRetries(0))
	_, err := q.Enqueue(ctx, execution{WorkflowID: "w"})
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	flows := e.NS.Prefix + "queue:{cwnack}:flows"
	set(e, flows)
	requireCorruptNoWrite(t, e, flows, func() error {
		_, err := q.Nack(ctx, j, errors.New("boom"))
		return err
	})
}

// TestDequeueAdoptActiveWrongTypeWritesNothing: a dequeue that adopts a
// seed-format job reads the active set before it adopts.
func TestDequeueAdoptActiveWrongTypeWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwadopt")
	wake := e.NS.Prefix + "queue:{cwadopt}:executions"
	active := e.NS.Prefix + "queue:{cwadopt}:active"
	require.NoError(t, e.Client.LPush(ctx, wake, `{"id":"seed1","workflow_id":"w"}`).Err())
	set(e, active)
	requireCorruptNoWrite(t, e, active, func() error {
		_, err := q.TryDequeue(ctx)
		return err
	})
}

// TestDequeueLowerLevelWrongTypeWritesNothing: a dequeue of 2 that leases
// a High job and would read the Normal set next reads its type first.
func TestDequeueLowerLevelWrongTypeWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwlevel")
	_, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithPriority(queue.High))
	require.NoError(t, err)
	normal := e.NS.Prefix + "queue:{cwlevel}:priority:normal"
	set(e, normal)
	requireCorruptNoWrite(t, e, normal, func() error {
		_, err := q.DequeueN(ctx, 2)
		return err
	})
}

// TestDequeueRateOnlyGroupLeaseSetWrongType: with a rate-only group
// limit, the group's lease set is read before any lease is written; one
// of the wrong type is repaired as with a concurrency cap (deleted and
// reported, naming the key), and the job is leased and in it.
func TestDequeueRateOnlyGroupLeaseSetWrongType(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwrate", queue.WithGroupLimits(queue.GroupLimit{Rate: queue.Rate{N: 5, Per: time.Hour}}))
	id, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithGroup("a"))
	require.NoError(t, err)
	ga := e.NS.Prefix + "queue:{cwrate}:gactive:a"
	set(e, ga)
	jobs, err := q.DequeueN(ctx, 1)
	require.True(t, errors.Is(err, keys.ErrCorrupt), "not ErrCorrupt: %v", err)
	require.ErrorContains(t, err, ga)
	require.Len(t, jobs, 1)
	require.Equal(t, id, jobs[0].ID)
	m, err := e.Client.ZRange(ctx, ga, 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{id}, m)
	n, err := e.Client.ZCard(ctx, e.NS.Prefix+"queue:{cwrate}:active").Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// TestDequeueGroupStaleLeaseKeptOnFailure: a concurrency-capped group's
// stale lease-set members are dropped with the leases' writes, so a
// dequeue that fails on the state hash leaves them too.
func TestDequeueGroupStaleLeaseKeptOnFailure(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwstale", queue.WithGroupLimits(queue.GroupLimit{Concurrency: 2}))
	_, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithGroup("a"))
	require.NoError(t, err)
	ga := e.NS.Prefix + "queue:{cwstale}:gactive:a"
	require.NoError(t, e.Client.ZAdd(ctx, ga, zmember(1, "ghost")).Err())
	state := e.NS.Prefix + "queue:{cwstale}:state"
	require.NoError(t, e.Client.Del(ctx, state).Err())
	set(e, state)
	requireCorruptNoWrite(t, e, state, func() error {
		_, err := q.TryDequeue(ctx)
		return err
	})
	// repaired, the ghost goes with the lease
	require.NoError(t, e.Client.Del(ctx, state).Err())
	_, err = q.TryDequeue(ctx)
	require.NoError(t, err)
	m, err := e.Client.ZRange(ctx, ga, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, m, 1)
	require.NotEqual(t, "ghost", m[0])
}

// TestResumeWakeWrongTypeWritesNothing: Resume reads the wake list
// before it clears the paused flag.
func TestResumeWakeWrongTypeWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwresume")
	_, err := q.Pause(ctx)
	require.NoError(t, err)
	wake := e.NS.Prefix + "queue:{cwresume}:executions"
	require.NoError(t, e.Client.Del(ctx, wake).Err())
	set(e, wake)
	requireCorruptNoWrite(t, e, wake, func() error {
		_, err := q.Resume(ctx)
		return err
	})
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	require.True(t, st.Paused)
}
