package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

type limitJob struct {
	N int `json:"n"`
}

func limitQueue(t *testing.T, e *harness.Env, name string, opts ...Option) *Queue[limitJob] {
	t.Helper()
	q, err := New[limitJob](e.Client, name, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return q
}

// fill enqueues n jobs with EnqueueBatch at its maximum size on a real
// backend (on miniredis, which has no Lua stack limit and serves one
// command at a time, in batches of 1000, so a 10,000-command pipeline
// does not hit the client's write timeout on a loaded machine).
func fill(t *testing.T, ctx context.Context, e *harness.Env, q *Queue[limitJob], n int, opts ...EnqueueOption) {
	t.Helper()
	batch := maxBatch
	if !e.Real() {
		batch = 1000
	}
	for start := 0; start < n; start += batch {
		items := make([]Item[limitJob], min(batch, n-start))
		for i := range items {
			items[i] = Item[limitJob]{Payload: limitJob{N: start + i}, Options: opts}
		}
		ids, err := q.EnqueueBatch(ctx, items)
		require.NoError(t, err)
		require.Len(t, ids, len(items))
	}
}

// Every documented maximum is used at that maximum, on every backend:
// miniredis has no Lua stack limit, a real Redis does (about 8000 values
// unpacked at once).
func TestLimitsAtTheirMaximum(t *testing.T) {
	e := harness.New(t)
	t.Run("EnqueueBatch, List and Purge of pending jobs", func(t *testing.T) {
		ctx := e.Ctx() // each part has its own 60 s
		q := limitQueue(t, e, "max-pending")
		fill(t, ctx, e, q, maxPurge)
		_, err := q.EnqueueBatch(ctx, make([]Item[limitJob], maxBatch+1))
		require.ErrorIs(t, err, ErrInvalid)
		l, err := q.List(ctx, Pending, 0, maxList)
		require.NoError(t, err)
		require.Len(t, l, maxList)
		n, err := q.Purge(ctx, Pending, maxPurge)
		require.NoError(t, err)
		require.Equal(t, maxPurge, n)
		_, err = q.Purge(ctx, Pending, maxPurge+1)
		require.ErrorIs(t, err, ErrInvalid)
		_, err = q.List(ctx, Pending, 0, maxList+1)
		require.ErrorIs(t, err, ErrInvalid)
	})
	t.Run("Purge of scheduled jobs", func(t *testing.T) {
		ctx := e.Ctx() // each part has its own 60 s
		q := limitQueue(t, e, "max-scheduled")
		fill(t, ctx, e, q, maxPurge, WithDelay(time.Hour))
		n, err := q.Purge(ctx, Scheduled, maxPurge)
		require.NoError(t, err)
		require.Equal(t, maxPurge, n)
	})
	t.Run("Purge of active jobs, leased at the fetch maximum", func(t *testing.T) {
		ctx := e.Ctx() // each part has its own 60 s
		q := limitQueue(t, e, "max-active")
		fill(t, ctx, e, q, maxPurge)
		leased := 0
		for leased < maxPurge {
			jobs, _, err := q.dequeue(ctx, maxFetch)
			require.NoError(t, err)
			require.NotEmpty(t, jobs)
			leased += len(jobs)
		}
		l, err := q.List(ctx, Active, 0, maxList)
		require.NoError(t, err)
		require.Len(t, l, maxList)
		n, err := q.Purge(ctx, Active, maxPurge)
		require.NoError(t, err)
		require.Equal(t, maxPurge, n)
	})
	t.Run("settle at its maximum", func(t *testing.T) {
		ctx := e.Ctx() // each part has its own 60 s
		q := limitQueue(t, e, "max-settle")
		fill(t, ctx, e, q, maxSettle)
		jobs, _, err := q.dequeue(ctx, maxFetch)
		require.NoError(t, err)
		require.Len(t, jobs, maxSettle)
		os := make([]outcome, len(jobs))
		for i, j := range jobs {
			os[i] = outcome{op: 'a', id: j.ID, dlv: j.Delivery, num: 1}
		}
		r, _, err := q.settle(ctx, "ack", q.request(), os)
		require.NoError(t, err)
		for _, v := range r {
			require.Equal(t, int64(settleDone), v)
		}
	})
	t.Run("dead-letter cap, Purge, Peek and Delete of dead letters", func(t *testing.T) {
		ctx := e.Ctx() // each part has its own 60 s
		q := limitQueue(t, e, "max-dead", WithDeadLetterCap(maxDeadCap))
		pipe := e.Client.Pipeline()
		batch := make([]any, 0, 1000)
		for i := 0; i < maxDeadCap; i++ {
			batch = append(batch, fmt.Sprintf(`{"id":"d%d","error":"x","failed_at":1,"retry_count":1,"max_retries":0,"level":"low","job":{"id":"d%d","payload":{"n":%d},"priority":-1,"created_at":"2026-01-16T10:00:00Z","retry_count":0,"max_retries":0}}`, i, i, i))
			if len(batch) == cap(batch) {
				pipe.RPush(ctx, q.dead, batch...)
				batch = batch[:0]
			}
		}
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
		// One more dead letter: the list is trimmed back to its cap.
		_, err = q.Enqueue(ctx, limitJob{N: -1}, WithID("last"), WithJobMaxRetries(0))
		require.NoError(t, err)
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		dead, err := q.Nack(ctx, j, fmt.Errorf("no"))
		require.NoError(t, err)
		require.True(t, dead)
		s, err := q.Stats(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(maxDeadCap), s.Dead)
		require.Equal(t, int64(1), s.TotalDeadTrimmed)
		// The entry at the far end is found by a scan of the whole list.
		far := fmt.Sprintf("d%d", maxDeadCap-2)
		in, err := q.Peek(ctx, far)
		require.NoError(t, err)
		require.Equal(t, Dead, in.State)
		require.NoError(t, q.Requeue(ctx, far))
		require.NoError(t, q.Delete(ctx, far))
		l, err := q.List(ctx, Dead, 0, maxList)
		require.NoError(t, err)
		require.Len(t, l, maxList)
		n, err := q.Purge(ctx, Dead, maxPurge)
		require.NoError(t, err)
		require.Equal(t, maxPurge, n)
		require.NoError(t, e.Client.Del(ctx, q.dead).Err())
	})
}
