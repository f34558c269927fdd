package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// readAll reads every event after "after" in small pages, as a reader
// that stops and resumes from the last ID it handled.
func readAll(t *testing.T, q *queue.Queue[execution], after string) ([]queue.Event, string) {
	t.Helper()
	var out []queue.Event
	for {
		evs, err := q.ReadEvents(context.Background(), after, 7, 0)
		require.NoError(t, err)
		if len(evs) == 0 {
			return out, after
		}
		out = append(out, evs...)
		after = evs[len(evs)-1].ID
	}
}

// TestEventsLifecycle: every change of a job's life is recorded once, in
// order, by the script that made it; a reader resuming from its last ID
// misses none while many workers run.
func TestEventsLifecycle(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "ev", queue.WithEvents(100000), queue.WithMaxRetries(1), queue.WithBackoff(queue.ConstantBackoff(0)))

	// one job through each path, by hand
	_, err := q.Enqueue(ctx, execution{WorkflowID: "a"}, queue.WithID("ok"))
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, j.SetProgress(ctx, 50))
	require.NoError(t, q.Ack(ctx, j))
	_, err = q.Enqueue(ctx, execution{WorkflowID: "b"}, queue.WithID("bad"))
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		j, err = q.TryDequeue(ctx)
		require.NoError(t, err)
		_, err = q.Nack(ctx, j, errors.New("boom"))
		require.NoError(t, err)
	}
	_, err = q.Enqueue(ctx, execution{WorkflowID: "c"}, queue.WithID("gone"), queue.WithDelay(time.Hour))
	require.NoError(t, err)
	_, err = q.Cancel(ctx, "gone")
	require.NoError(t, err)

	evs, cursor := readAll(t, q, "")
	var got []string
	for _, ev := range evs {
		s := string(ev.Kind) + " " + ev.JobID
		if ev.Error != "" {
			s += " " + ev.Error
		}
		if ev.Progress != nil {
			s += " " + string(ev.Progress)
		}
		got = append(got, s)
		assert.False(t, ev.At.IsZero())
	}
	assert.Equal(t, []string{
		"enqueued ok", "started ok", "progress ok 50", "completed ok",
		"enqueued bad", "started bad", "failed bad boom", "retried bad", "started bad", "failed bad boom", "dead bad boom",
		"enqueued gone", "cancelled gone",
	}, got)
	assert.Positive(t, evs[1].Delivery)
	assert.Greater(t, evs[8].Delivery, evs[5].Delivery, "a later delivery, a larger token")
	assert.Equal(t, 1, evs[8].RetryCount, "the second start follows one failed attempt")

	// many workers; the reader resumes from its cursor and sees every
	// job enqueued, started and completed exactly once
	const n = 200
	rctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- q.Run(rctx, func(ctx context.Context, j *queue.Job[execution]) error { return nil }, 8)
	}()
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			if p%2 == 1 { // half the jobs come by EnqueueBatch
				items := make([]queue.Item[execution], n/4)
				for i := range items {
					items[i] = queue.Item[execution]{Payload: execution{WorkflowID: "r"}, Options: []queue.EnqueueOption{queue.WithID(fmt.Sprintf("r%d-%d", p, i))}}
				}
				_, err := q.EnqueueBatch(ctx, items)
				assert.NoError(t, err)
				return
			}
			for i := 0; i < n/4; i++ {
				_, err := q.Enqueue(ctx, execution{WorkflowID: "r"}, queue.WithID(fmt.Sprintf("r%d-%d", p, i)))
				assert.NoError(t, err)
			}
		}(p)
	}
	counts := map[queue.EventKind]map[string]int{}
	harness.WaitFor(t, "every job's events", func() bool {
		var more []queue.Event
		more, cursor = readAll(t, q, cursor)
		for _, ev := range more {
			if counts[ev.Kind] == nil {
				counts[ev.Kind] = map[string]int{}
			}
			counts[ev.Kind][ev.JobID]++
		}
		return len(counts[queue.EventCompleted]) == n
	})
	wg.Wait()
	stop()
	require.NoError(t, <-errc)
	for _, k := range []queue.EventKind{queue.EventEnqueued, queue.EventStarted, queue.EventCompleted} {
		require.Len(t, counts[k], n, k)
		for id, c := range counts[k] {
			require.Equal(t, 1, c, "%s %s", k, id)
		}
	}

	_, err = q.ReadEvents(ctx, "x", 1, 0)
	require.ErrorIs(t, err, queue.ErrInvalid)
}

// TestEventsOffWritesNone: without WithEvents no script writes the stream.
func TestEventsOffWritesNone(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "noev")
	_, err := q.Enqueue(ctx, execution{WorkflowID: "a"})
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, q.Ack(ctx, j))
	for _, k := range e.Keys() {
		assert.NotContains(t, k, ":events")
	}
	evs, err := q.ReadEvents(ctx, "", 10, 0)
	require.NoError(t, err)
	assert.Empty(t, evs)
}

// TestEventsTrimmed: a reader resuming after an event the stream no
// longer holds is told that events may be gone, with the events from the
// oldest kept; resuming after those, or after any event still held, is
// not told so.
func TestEventsTrimmed(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "trim", queue.WithEvents(10))
	for i := 0; i < 3; i++ {
		_, err := q.Enqueue(ctx, execution{WorkflowID: "a"})
		require.NoError(t, err)
	}
	evs, last := readAll(t, q, "")
	require.Len(t, evs, 3)

	// Enqueue until the stream's first entry is past the reader's last
	// (XADD MAXLEN ~ 10 trims whole nodes of entries on a real Redis).
	first := func() string {
		evs, err := q.ReadEvents(ctx, "", 1, 0)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		return evs[0].ID
	}
	items := make([]queue.Item[execution], 100)
	for i := range items {
		items[i] = queue.Item[execution]{Payload: execution{WorkflowID: "b"}}
	}
	before := func(a, b string) bool { // stream IDs "ms-seq"
		var am, as, bm, bs uint64
		_, err := fmt.Sscanf(a+" "+b, "%d-%d %d-%d", &am, &as, &bm, &bs)
		require.NoError(t, err)
		return am < bm || am == bm && as < bs
	}
	for n := 0; !before(last, first()); n++ {
		require.Less(t, n, 50, "the stream was never trimmed")
		_, err := q.EnqueueBatch(ctx, items)
		require.NoError(t, err)
	}
	oldest := first()

	evs, err := q.ReadEvents(ctx, last, 10, 0)
	require.ErrorIs(t, err, queue.ErrEventsTrimmed)
	assert.Contains(t, err.Error(), oldest)
	require.Len(t, evs, 10)
	assert.Equal(t, oldest, evs[0].ID)

	_, err = q.ReadEvents(ctx, evs[9].ID, 10, 0)
	require.NoError(t, err)
	for _, start := range []string{"", "0", "0-0"} { // the stream's start, however spelt
		evs, err := q.ReadEvents(ctx, start, 1, 0)
		require.NoError(t, err, "after %q", start)
		require.Len(t, evs, 1)
		assert.Equal(t, oldest, evs[0].ID)
	}
	_, err = q.ReadEvents(ctx, oldest, 10, 0)
	require.NoError(t, err)
	// the wait for a new event is not told either
	_, tail := readAll(t, q, oldest)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = q.Enqueue(context.Background(), execution{WorkflowID: "c"})
	}()
	evs, err = q.ReadEvents(ctx, tail, 10, 5*time.Second)
	require.NoError(t, err)
	require.Len(t, evs, 1)
}

// TestEventsCorruptEntry: an entry that is not an event is skipped and
// reported, naming the stream, after the events around it; a reader
// resuming after it goes on.
func TestEventsCorruptEntry(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "evbad", queue.WithEvents(100))
	_, err := q.Enqueue(ctx, execution{WorkflowID: "a"})
	require.NoError(t, err)
	var stream string
	for _, k := range e.Keys() {
		if strings.HasSuffix(k, ":events") {
			stream = k
		}
	}
	require.NotEmpty(t, stream)
	require.NoError(t, e.Client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []string{"kind", "bogus"}}).Err())
	_, err = q.Enqueue(ctx, execution{WorkflowID: "b"})
	require.NoError(t, err)

	evs, err := q.ReadEvents(ctx, "", 10, 0)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	assert.Contains(t, err.Error(), stream)
	assert.NotErrorIs(t, err, queue.ErrEventsTrimmed)
	require.Len(t, evs, 2)
	evs, err = q.ReadEvents(ctx, evs[1].ID, 10, 0)
	require.NoError(t, err)
	assert.Empty(t, evs)
}
