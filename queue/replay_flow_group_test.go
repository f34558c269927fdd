package queue_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// eventsOf counts q's events of kind k per job ID.
func eventsOf(t *testing.T, q *queue.Queue[execution], k queue.EventKind) map[string]int {
	t.Helper()
	evs, _ := readAllG(t, q)
	n := map[string]int{}
	for _, ev := range evs {
		if ev.Kind == k {
			n[ev.JobID]++
		}
	}
	return n
}

// An EnqueueFlow whose reply is lost after the server ran it, and which
// go-redis then resends, reports its first outcome: no ErrDuplicate, the
// parent and each child created once, each child run once and the
// parent once, after all of them. On all three backends.
func TestReplayedFlowRunsEachJobOnce(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	q, err := queue.New[execution](pc, "replay-flow", queue.WithNamespace(e.NS), queue.WithEvents(1000))
	require.NoError(t, err)
	flow := func(parent string, kids int) (queue.Item[execution], []queue.Item[execution]) {
		pi, cs := flowItems(parent, kids)
		pi.Options = []queue.EnqueueOption{queue.WithID(parent)}
		for i := range cs {
			cs[i].Options = []queue.EnqueueOption{queue.WithID(fmt.Sprintf("%s-c%d", parent, i))}
		}
		return pi, cs
	}
	// A first flow loads the script, so that the lost reply below is the
	// script's own, not a NOSCRIPT answer before it ever ran.
	wp, wc := flow("warm", 1)
	_, _, err = q.EnqueueFlow(ctx, wp, wc, queue.FailParent)
	require.NoError(t, err)

	const kids = 5
	lp, lc := flow("lostf", kids)
	p.LoseReply(fmt.Sprintf("lostf-c%d", kids-1)) // the last child: the whole request reached the server
	pid, cids, err := q.EnqueueFlow(ctx, lp, lc, queue.FailParent)
	require.NoError(t, err, "a resent flow is not a duplicate")
	require.Equal(t, int64(1), p.Lost(), "the armed reply was lost")
	require.Zero(t, p.Pending())
	require.Equal(t, "lostf", pid)
	require.Len(t, cids, kids)
	// a new request with the same IDs is a true duplicate
	_, _, err = q.EnqueueFlow(ctx, lp, lc, queue.FailParent)
	require.ErrorIs(t, err, queue.ErrDuplicate)

	s, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2+1+kids, s.TotalEnqueued, "each job of the flows enqueued once")
	require.EqualValues(t, 1+kids, s.Pending(), "the children are ready, the parents wait")
	in, err := q.Peek(ctx, pid)
	require.NoError(t, err)
	require.Equal(t, queue.Waiting, in.State)

	// Drain the queue one job at a time: every job runs once, each parent
	// after all of its children.
	runs := map[string]int{}
	var order []string
	for {
		j, err := q.TryDequeue(ctx)
		if err != nil {
			require.ErrorIs(t, err, queue.ErrEmpty)
			break
		}
		runs[j.ID]++
		order = append(order, j.ID)
		require.NoError(t, q.Ack(ctx, j))
	}
	want := map[string]int{"warm": 1, "warm-c0": 1, pid: 1}
	for _, c := range cids {
		want[c] = 1
	}
	require.Equal(t, want, runs, "each job of the flows ran once")
	require.Equal(t, pid, order[len(order)-1], "the parent ran after its children")
	require.Equal(t, want, eventsOf(t, q, queue.EventEnqueued), "each job enqueued once")
	s, err = q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(want), s.TotalProcessed)
	require.Zero(t, s.Pending()+s.InFlight+s.Dead)
	n, err := e.Client.Exists(ctx, e.NS.Prefix+"queue:{replay-flow}:flows").Result()
	require.NoError(t, err)
	require.Zero(t, n, "no flow left waiting")
}

// A group-limited dequeue whose reply is lost after the server ran it,
// and which go-redis then resends, gets the first run's job back: leased
// once, counted once against its group's concurrency and rate, delivered
// once. Group a has the queue's group limits (WithGroupLimits), group b
// its own (WithGroupLimit). On all three backends.
func TestReplayedGroupDequeueCountsOnce(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	// Rate windows are a day long (fixed, of the server clock): a window
	// that ends during the test only frees room, so a job counted twice
	// still shows.
	lim := queue.GroupLimit{Concurrency: 2, Rate: queue.Rate{N: 2, Per: queue.MaxRatePeriod}}
	q, err := queue.New[execution](pc, "replay-group", queue.WithNamespace(e.NS), queue.WithEvents(1000),
		queue.WithGroupLimits(lim), queue.WithGroupLimit("b", lim))
	require.NoError(t, err)
	// An empty dequeue loads the script first (see the flow test above).
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)

	ids := map[string][]string{}
	for i := 0; i < 3; i++ {
		for _, g := range []string{"a", "b"} {
			id := fmt.Sprintf("%s%d", g, i)
			_, err := q.Enqueue(ctx, execution{WorkflowID: g}, queue.WithID(id), queue.WithGroup(g))
			require.NoError(t, err)
			ids[g] = append(ids[g], id)
		}
	}
	next := func() *queue.Job[execution] {
		t.Helper()
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		return j
	}
	empty := func(why string) {
		t.Helper()
		_, err := q.TryDequeue(ctx)
		require.ErrorIs(t, err, queue.ErrEmpty, why)
	}
	var held []*queue.Job[execution]
	for k := 0; k < 2; k++ {
		for _, g := range []string{"a", "b"} {
			p.LoseReply(":inbox")
			j := next()
			require.Equal(t, int64(len(held)+1), p.Lost(), "the armed reply was lost")
			require.Zero(t, p.Pending())
			require.Equal(t, ids[g][k], j.ID, "the first run's job, not the next one")
			require.Equal(t, g, j.Group)
			held = append(held, j)
			s, err := q.Stats(ctx)
			require.NoError(t, err)
			require.EqualValues(t, len(held), s.InFlight, "one job leased per dequeue")
		}
	}
	// Each group holds 2 leases and 2 starts of this window: at both of
	// its limits, and no further.
	empty("both groups at their limits")
	for _, j := range held {
		require.NoError(t, q.Ack(ctx, j), "the lease returned is the one held")
	}
	// The concurrency places are free again, the window's rate is not.
	empty("both groups at their rate")
	require.Equal(t, map[string]int{"a0": 1, "a1": 1, "b0": 1, "b1": 1}, eventsOf(t, q, queue.EventStarted), "each job delivered once")
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4, s.TotalProcessed)
	require.EqualValues(t, 2, s.Pending(), "a2 and b2 wait for the next window")
	require.Zero(t, s.InFlight)

	// Concurrency alone: a group of one place, its lease counted once.
	pc2, p2 := e.ProxyClient(nil)
	c, err := queue.New[execution](pc2, "replay-group-c", queue.WithNamespace(e.NS),
		queue.WithGroupLimits(queue.GroupLimit{Concurrency: 1}))
	require.NoError(t, err)
	_, err = c.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	for i := 0; i < 2; i++ {
		_, err := c.Enqueue(ctx, execution{}, queue.WithID(fmt.Sprint("c", i)), queue.WithGroup("one"))
		require.NoError(t, err)
	}
	p2.LoseReply(":inbox")
	j, err := c.TryDequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), p2.Lost())
	require.Equal(t, "c0", j.ID)
	_, err = c.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty, "the group's one place is taken")
	require.NoError(t, c.Ack(ctx, j))
	j, err = c.TryDequeue(ctx)
	require.NoError(t, err, "the ack freed the place")
	require.Equal(t, "c1", j.ID)
	require.NoError(t, c.Ack(ctx, j))
}
