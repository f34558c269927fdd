package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// TestDequeueInboxTokenKeptOnFailure: a dequeue reads the stats hash, the
// state and jobs hashes and every level it reaches before it drops the
// wake-up tokens it read from the inbox, so a failing call leaves them.
func TestDequeueInboxTokenKeptOnFailure(t *testing.T) {
	cases := []struct {
		name, key string
		setup     func(e *harness.Env, q *queue.Queue[execution], k string)
	}{
		{"stats wrong type", "queue:stats:{q}", func(e *harness.Env, _ *queue.Queue[execution], k string) {
			require.NoError(t, e.Client.Del(e.Ctx(), k).Err())
			set(e, k)
		}},
		{"delivery sequence not a count", "queue:stats:{q}", func(e *harness.Env, q *queue.Queue[execution], k string) {
			_, err := q.Enqueue(e.Ctx(), execution{WorkflowID: "w"})
			require.NoError(t, err)
			require.NoError(t, e.Client.HSet(e.Ctx(), k, "delivery_seq", "many").Err())
		}},
		{"skip counter not a count, idle", "queue:stats:{q}", func(e *harness.Env, _ *queue.Queue[execution], k string) {
			// enq_seq ahead of the clock: the idle step moves it back
			require.NoError(t, e.Client.HSet(e.Ctx(), k, "enq_seq", "9000000000000000", "enq_skipped", "many").Err())
		}},
		{"state wrong type", "queue:{q}:state", func(e *harness.Env, q *queue.Queue[execution], k string) {
			_, err := q.Enqueue(e.Ctx(), execution{WorkflowID: "w"})
			require.NoError(t, err)
			require.NoError(t, e.Client.Del(e.Ctx(), k).Err())
			set(e, k)
		}},
	}
	e := harness.New(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "cwtok" + string(rune('a'+i))
			q := newQ(t, e, name)
			c.setup(e, q, e.NS.Prefix+replaceTag(c.key, name))
			require.NoError(t, e.Client.RPush(e.Ctx(), e.NS.Prefix+replaceTag("queue:{q}:inbox", name), "1").Err())
			requireCorruptNoWrite(t, e, e.NS.Prefix+replaceTag(c.key, name), func() error {
				_, err := q.TryDequeue(e.Ctx())
				return err
			})
		})
	}
}

// TestDequeueLowerLevelDeadLetterWritesNothing: a dequeue of 2 that leases
// a High job and must dead-letter a Normal one (its state does not parse)
// checks the stats counters dead-lettering adds to before it leases.
func TestDequeueLowerLevelDeadLetterWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwlower")
	_, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithPriority(queue.High))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithID("bad"))
	require.NoError(t, err)
	require.NoError(t, e.Client.HSet(ctx, e.NS.Prefix+"queue:{cwlower}:state", "bad", "garbage").Err())
	stats := e.NS.Prefix + "queue:stats:{cwlower}"
	require.NoError(t, e.Client.HSet(ctx, stats, "total_dead", "many").Err())
	requireCorruptNoWrite(t, e, stats, func() error {
		_, err := q.DequeueN(ctx, 2)
		return err
	})
}

// TestDequeueGroupHeldLowerLevelWritesNothing: a High job held back by
// its group's concurrency cap sends the dequeue on to the Normal set; a
// Normal set of the wrong type fails it before the group's corrupt rate
// key is repaired (deleted).
func TestDequeueGroupHeldLowerLevelWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwheld", queue.WithGroupLimits(queue.GroupLimit{Concurrency: 1, Rate: queue.Rate{N: 5, Per: time.Hour}}))
	for range 2 {
		_, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithGroup("a"), queue.WithPriority(queue.High))
		require.NoError(t, err)
	}
	_, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"queue:{cwheld}:grate:a", "garbage", time.Hour).Err())
	normal := e.NS.Prefix + "queue:{cwheld}:priority:normal"
	set(e, normal)
	requireCorruptNoWrite(t, e, normal, func() error {
		_, err := q.DequeueN(ctx, 1)
		return err
	})
}

// TestDequeueRateKeyRepairDeferred: a queue rate key that is not
// window,count is deleted (and reported) only by a dequeue that
// succeeds: one that fails on the state hash leaves it.
func TestDequeueRateKeyRepairDeferred(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwqrate", queue.WithRateLimit(5, time.Hour))
	_, err := q.Enqueue(ctx, execution{WorkflowID: "w"})
	require.NoError(t, err)
	require.NoError(t, e.Client.Set(ctx, e.NS.Prefix+"queue:{cwqrate}:rate", "garbage", time.Hour).Err())
	state := e.NS.Prefix + "queue:{cwqrate}:state"
	require.NoError(t, e.Client.Del(ctx, state).Err())
	set(e, state)
	requireCorruptNoWrite(t, e, state, func() error {
		_, err := q.TryDequeue(ctx)
		return err
	})
}

// TestDequeueGroupScanUnreadLevelWritesNothing: a group-limited dequeue
// whose pick reads its most ready jobs (1,000) in the levels above, none
// leasable (IDs without their job), reads the type of the level it left
// unread before it drops them, since the idle step reads every level.
func TestDequeueGroupScanUnreadLevelWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwscan", queue.WithGroupLimits(queue.GroupLimit{Concurrency: 1}))
	for lvl, n := range map[string]int{"high": 600, "normal": 400} {
		zs := make([]redis.Z, n)
		for i := range zs {
			zs[i] = zmember(1000, fmt.Sprintf("%s-%d", lvl, i))
		}
		require.NoError(t, e.Client.ZAdd(ctx, e.NS.Prefix+"queue:{cwscan}:priority:"+lvl, zs...).Err())
	}
	low := e.NS.Prefix + "queue:{cwscan}:priority:low"
	set(e, low)
	requireCorruptNoWrite(t, e, low, func() error {
		_, err := q.DequeueN(ctx, 512)
		return err
	})
}

// TestDequeueAdoptSequenceAtEndWritesNothing: a delivery sequence too
// close to 2^53 to number the call's deliveries fails a dequeue that
// adopts a seed-format job before it adopts.
func TestDequeueAdoptSequenceAtEndWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cwseqend")
	wake := e.NS.Prefix + "queue:{cwseqend}:executions"
	require.NoError(t, e.Client.LPush(ctx, wake, `{"id":"seed1","workflow_id":"w"}`).Err())
	stats := e.NS.Prefix + "queue:stats:{cwseqend}"
	require.NoError(t, e.Client.HSet(ctx, stats, "delivery_seq", "9007199254740990").Err())
	requireCorruptNoWrite(t, e, stats, func() error {
		_, err := q.TryDequeue(ctx)
		return err
	})
}
