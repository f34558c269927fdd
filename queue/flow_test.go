package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

func flowItems(parent string, n int, opts ...queue.EnqueueOption) (queue.Item[execution], []queue.Item[execution]) {
	kids := make([]queue.Item[execution], n)
	for i := range kids {
		kids[i] = queue.Item[execution]{Payload: execution{WorkflowID: fmt.Sprintf("%s/child-%d", parent, i)}, Options: opts}
	}
	return queue.Item[execution]{Payload: execution{WorkflowID: parent, TriggerType: "parent"}}, kids
}

// TestFlowParentRunsOnceAfterChildren: 6 flows of 15 children each under
// 8 workers: each parent runs exactly once, after all of its children
// were acked, never before.
func TestFlowParentRunsOnceAfterChildren(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "flow")
	const flows, kids = 6, 15
	parents := map[string]string{} // parent ID -> name
	for f := 0; f < flows; f++ {
		p, c := flowItems(fmt.Sprint("flow-", f), kids)
		pid, cids, err := q.EnqueueFlow(ctx, p, c, queue.FailParent)
		require.NoError(t, err)
		require.Len(t, cids, kids)
		parents[pid] = p.Payload.WorkflowID
	}
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, flows*kids, s.Pending(), "parents wait")
	for pid, name := range parents {
		in, err := q.Peek(ctx, pid)
		require.NoError(t, err)
		require.Equal(t, queue.Waiting, in.State)
		require.Equal(t, name, in.Payload.WorkflowID)
		require.True(t, in.At.IsZero())
	}
	require.EqualValues(t, flows*(kids+1), s.TotalEnqueued)

	var mu sync.Mutex
	childDone := map[string]int{}    // flow -> children acked
	parentRuns := map[string][]int{} // flow -> children done at each run
	rctx, stop := context.WithCancel(ctx)
	go func() {
		harness.WaitFor(t, "every parent", func() bool { mu.Lock(); defer mu.Unlock(); return len(parentRuns) == flows })
		// Then wait for the queue to be empty, so that a second run of a
		// parent, had there been one, has happened (rather than waiting a
		// fixed time, which a busy machine may not give it).
		harness.WaitFor(t, "an empty queue", func() bool {
			s, err := q.Stats(ctx)
			return err == nil && s.Pending()+s.InFlight+s.Delayed[queue.High]+s.Delayed[queue.Normal]+s.Delayed[queue.Low] == 0
		})
		stop()
	}()
	require.NoError(t, q.Run(rctx, func(_ context.Context, j *queue.Job[execution]) error {
		mu.Lock()
		defer mu.Unlock()
		if j.Payload.TriggerType == "parent" {
			require.Equal(t, parents[j.ID], j.Payload.WorkflowID)
			parentRuns[j.Payload.WorkflowID] = append(parentRuns[j.Payload.WorkflowID], childDone[j.Payload.WorkflowID])
			return nil
		}
		var flow string
		var n int
		_, err := fmt.Sscanf(j.Payload.WorkflowID, "%6s/child-%d", &flow, &n)
		require.NoError(t, err)
		// counted as done before the ack: the parent must see all
		childDone[flow]++
		return nil
	}, 8))
	for f := 0; f < flows; f++ {
		require.Equal(t, []int{kids}, parentRuns[fmt.Sprint("flow-", f)])
	}
	for pid := range parents {
		_, err := q.Peek(ctx, pid)
		require.ErrorIs(t, err, queue.ErrNotFound, "acked, not kept")
	}
	s, err = q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, flows*(kids+1), s.TotalProcessed)
	n, err := e.Client.Exists(ctx, e.NS.Prefix+"queue:{flow}:flows").Result()
	require.NoError(t, err)
	require.Zero(t, n, "the flows hash is empty")
}

// TestFlowDeadChild: a dead child fails the parent (dead-lettered, never
// run) or is ignored (the parent runs after the others), as the flow
// says; a child whose lease expires for the last time counts too.
func TestFlowDeadChild(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "flowdead", queue.WithLease(100*time.Millisecond))
	run := func(policy queue.DeadChild) (pid string, ran []string) {
		p, c := flowItems("f", 3, queue.WithJobMaxRetries(0))
		pid, cids, err := q.EnqueueFlow(ctx, p, c, policy)
		require.NoError(t, err)
		for {
			j, err := q.TryDequeue(ctx)
			if errors.Is(err, queue.ErrEmpty) {
				return pid, ran
			}
			require.NoError(t, err)
			ran = append(ran, j.ID)
			if j.ID == cids[1] {
				_, err = q.Nack(ctx, j, errors.New("boom")) // no retry left: dead
			} else {
				err = q.Ack(ctx, j)
			}
			require.NoError(t, err)
		}
	}
	pid, ran := run(queue.FailParent)
	require.Len(t, ran, 3, "the children only")
	require.NotContains(t, ran, pid)
	dead, err := q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 2)
	require.Equal(t, pid, dead[0].ID)
	require.Contains(t, dead[0].LastError, "is dead")

	pid, ran = run(queue.IgnoreDead)
	require.Len(t, ran, 4)
	require.Equal(t, pid, ran[3], "the parent last")

	// a child dead by lease expiry (the dequeue script's path)
	p, c := flowItems("g", 1, queue.WithJobMaxRetries(0))
	pid, _, err = q.EnqueueFlow(ctx, p, c, queue.FailParent)
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx) // its worker crashes
	require.NoError(t, err)
	e.Advance(150 * time.Millisecond)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	dead, err = q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Equal(t, pid, dead[0].ID)

	// a live ID: nothing written
	id, err := q.Enqueue(ctx, execution{}, queue.WithID("taken"))
	require.NoError(t, err)
	p, c = flowItems("h", 2)
	c[1].Options = []queue.EnqueueOption{queue.WithID(id)}
	_, _, err = q.EnqueueFlow(ctx, p, c, queue.FailParent)
	require.ErrorIs(t, err, queue.ErrDuplicate)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, s.Pending())
	_, _, err = q.EnqueueFlow(ctx, p, nil, queue.FailParent)
	require.ErrorIs(t, err, queue.ErrInvalid)
	c[1].Options = []queue.EnqueueOption{queue.WithDelay(time.Second)}
	_, _, err = q.EnqueueFlow(ctx, p, c, queue.FailParent)
	require.ErrorIs(t, err, queue.ErrInvalid)
}

// TestFlowDeleteAndPurge: deleting a child counts as a dead child;
// deleting a waiting parent lets its children run on; purging a child
// purges its waiting parent; nothing of a flow stays in the flows hash.
func TestFlowDeleteAndPurge(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "flowdel")
	flows := e.NS.Prefix + "queue:{flowdel}:flows"
	// a deleted child, ignored: the parent runs after the other
	p, c := flowItems("a", 2)
	pid, cids, err := q.EnqueueFlow(ctx, p, c, queue.IgnoreDead)
	require.NoError(t, err)
	require.NoError(t, q.Delete(ctx, cids[0]))
	require.Equal(t, []string{cids[1], pid}, drainAck(t, q))
	// a deleted child fails its parent
	p, c = flowItems("b", 2)
	pid, cids, err = q.EnqueueFlow(ctx, p, c, queue.FailParent)
	require.NoError(t, err)
	require.NoError(t, q.Delete(ctx, cids[1]))
	require.Equal(t, []string{cids[0]}, drainAck(t, q))
	dead, err := q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Equal(t, pid, dead[0].ID)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, s.TotalDead)
	// a deleted parent: its children run on
	p, c = flowItems("c", 2)
	pid, cids, err = q.EnqueueFlow(ctx, p, c, queue.FailParent)
	require.NoError(t, err)
	require.NoError(t, q.Delete(ctx, pid))
	require.ElementsMatch(t, cids, drainAck(t, q))
	// a purge of the children takes the parent too
	p, c = flowItems("d", 3)
	_, _, err = q.EnqueueFlow(ctx, p, c, queue.FailParent)
	require.NoError(t, err)
	n, err := q.Purge(ctx, queue.Pending, 100)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Empty(t, drainAck(t, q))
	x, err := e.Client.Exists(ctx, flows).Result()
	require.NoError(t, err)
	require.Zero(t, x, "the flows hash is empty")
	l, err := e.Client.HLen(ctx, e.NS.Prefix+"queue:{flowdel}:jobs").Result()
	require.NoError(t, err)
	require.Zero(t, l)
}

// drainAck dequeues and acks every ready job of q, returning their IDs in
// the order they ran.
func drainAck(t *testing.T, q *queue.Queue[execution]) (ran []string) {
	t.Helper()
	ctx := context.Background()
	for {
		j, err := q.TryDequeue(ctx)
		if errors.Is(err, queue.ErrEmpty) {
			return ran
		}
		require.NoError(t, err)
		ran = append(ran, j.ID)
		require.NoError(t, q.Ack(ctx, j))
	}
}
