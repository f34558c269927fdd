package queue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// deadJobs enqueues n jobs with no retries and fails each to the
// dead-letter list; it returns their IDs.
func deadJobs(t *testing.T, e *harness.Env, q *queue.Queue[execution], n int) []string {
	ctx := e.Ctx()
	var ids []string
	for i := 0; i < n; i++ {
		id, err := q.Enqueue(ctx, execution{WorkflowID: fmt.Sprint("wf-", i)}, queue.WithJobMaxRetries(0))
		require.NoError(t, err)
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		dead, err := q.Nack(ctx, j, errors.New("boom"))
		require.NoError(t, err)
		require.True(t, dead)
		ids = append(ids, id)
	}
	return ids
}

func TestDailyAndOldestReady(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "daily")
	in, err := queue.NewInspector(e.Client, queue.WithNamespace(e.NS))
	require.NoError(t, err)
	deadJobs(t, e, q, 2)
	_, err = q.Enqueue(ctx, execution{WorkflowID: "ok"})
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, q.Ack(ctx, j))

	days, err := in.Daily(ctx, "daily", 90)
	require.NoError(t, err)
	require.Len(t, days, 90)
	today := days[89]
	require.Equal(t, e.Now().UTC().Format("2006-01-02"), today.Day)
	require.Equal(t, queue.DayStats{Day: today.Day, Processed: 1, Failed: 2}, today)
	require.Equal(t, e.Now().UTC().AddDate(0, 0, -89).Format("2006-01-02"), days[0].Day)
	require.Zero(t, days[0].Processed+days[0].Failed)
	ttl, err := e.Client.TTL(ctx, e.NS.Prefix+"queue:{daily}:daily:"+today.Day).Result()
	require.NoError(t, err)
	require.InDelta(t, (91 * 24 * time.Hour).Seconds(), ttl.Seconds(), 5)
	for _, n := range []int{0, 91} {
		_, err = in.Daily(ctx, "daily", n)
		require.ErrorIs(t, err, queue.ErrInvalid)
	}
	// a count that is not a number names the day's key
	require.NoError(t, e.Client.HSet(ctx, e.NS.Prefix+"queue:{daily}:daily:"+today.Day, "failed", "x").Err())
	_, err = in.Daily(ctx, "daily", 1)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	require.ErrorContains(t, err, "daily:"+today.Day)

	// latency: the oldest ready job's age, by the server clock
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, s.OldestReady)
	_, err = q.Enqueue(ctx, execution{WorkflowID: "old"}, queue.WithPriority(queue.Low))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, execution{WorkflowID: "later"}, queue.WithDelay(time.Hour))
	require.NoError(t, err)
	if !e.Real() {
		e.Advance(3 * time.Second)
		s, err = q.Stats(ctx)
		require.NoError(t, err)
		require.Equal(t, 3*time.Second, s.OldestReady)
	} else {
		s, err = q.Stats(ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, s.OldestReady, time.Duration(0))
	}
}

func TestPromote(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "promote")
	id, err := q.Enqueue(ctx, execution{WorkflowID: "later"}, queue.WithDelay(time.Hour), queue.WithPriority(queue.High))
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	require.NoError(t, q.Promote(ctx, id))
	require.ErrorIs(t, q.Promote(ctx, id), queue.ErrNotFound) // ready now
	require.ErrorIs(t, q.Promote(ctx, "nope"), queue.ErrNotFound)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, id, j.ID)
	require.Equal(t, queue.High, j.Priority)
	require.ErrorIs(t, q.Promote(ctx, id), queue.ErrNotFound) // in flight
	require.ErrorIs(t, q.Promote(ctx, ""), queue.ErrInvalid)

	// a flow child keeps its flow: its parent runs after it
	f := newQ(t, e, "pflow")
	pid, cids, err := f.EnqueueFlow(ctx, queue.Item[execution]{Payload: execution{WorkflowID: "parent"}}, []queue.Item[execution]{{Payload: execution{WorkflowID: "child"}, Options: []queue.EnqueueOption{queue.WithJobMaxRetries(3)}}}, queue.FailParent)
	require.NoError(t, err)
	c, err := f.TryDequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, cids[0], c.ID)
	_, err = f.Nack(ctx, c, errors.New("retry me"))
	require.NoError(t, err)
	require.ErrorIs(t, f.Promote(ctx, pid), queue.ErrNotFound) // waiting for its child
	require.NoError(t, f.Promote(ctx, cids[0]))
	c, err = f.TryDequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, cids[0], c.ID)
	require.NoError(t, f.Ack(ctx, c))
	p, err := f.TryDequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, pid, p.ID)
}

func TestBulkDeadLetters(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "bulk")
	ids := deadJobs(t, e, q, 5)

	r, err := q.RequeueMany(ctx, ids[0], ids[1], "nope", ids[0])
	require.NoError(t, err)
	require.Equal(t, 2, r)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, s.Dead)
	require.EqualValues(t, 2, s.Pending())

	n, err := q.DeleteMany(ctx, ids[2], ids[0], "nope")
	require.NoError(t, err)
	require.Equal(t, 2, n) // a dead letter and a live job
	n, err = q.DeleteMany(ctx, ids[2])
	require.NoError(t, err)
	require.Zero(t, n)

	// all: a corrupt entry and a conflicting one are skipped and stay
	dlq := e.NS.Prefix + "queue:dlq:{bulk}"
	require.NoError(t, e.Client.RPush(ctx, dlq, "junk").Err())
	_, err = q.Enqueue(ctx, execution{WorkflowID: "live"}, queue.WithID("live-1"))
	require.NoError(t, err)
	entry := `{"id":"live-1","error":"x","failed_at":1,"retry_count":1,"max_retries":0,"level":"normal","job":{"id":"live-1"}}`
	require.NoError(t, e.Client.RPush(ctx, dlq, entry).Err())
	r, err = q.RequeueDead(ctx, 1) // skips the corrupt and the conflicting entries
	require.NoError(t, err)
	require.Equal(t, 1, r)
	r, err = q.RequeueDead(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, r)
	r, err = q.RequeueDead(ctx, 100)
	require.NoError(t, err)
	require.Zero(t, r)
	l, err := e.Client.LLen(ctx, dlq).Result()
	require.NoError(t, err)
	require.EqualValues(t, 2, l)

	for _, bad := range [][]string{nil, make([]string, 501)} {
		_, err = q.RequeueMany(ctx, bad...)
		require.ErrorIs(t, err, queue.ErrInvalid)
		_, err = q.DeleteMany(ctx, bad...)
		require.ErrorIs(t, err, queue.ErrInvalid)
	}
	_, err = q.RequeueDead(ctx, 0)
	require.ErrorIs(t, err, queue.ErrInvalid)
	// 500 IDs, the maximum, in one call
	many := make([]string, 500)
	for i := range many {
		many[i] = fmt.Sprint("m-", i)
	}
	n, err = q.DeleteMany(ctx, many...)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestInspectorPageAndJob(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "page")
	in, err := queue.NewInspector(e.Client, queue.WithNamespace(e.NS))
	require.NoError(t, err)
	ids := deadJobs(t, e, q, 3)
	dlq := e.NS.Prefix + "queue:dlq:{page}"
	require.NoError(t, e.Client.LPush(ctx, dlq, "not json").Err())

	p, err := in.Page(ctx, "page", queue.Dead, 0, 2, "")
	require.NoError(t, err)
	require.EqualValues(t, 4, p.Total)
	require.Len(t, p.Rows, 2)
	require.NotEmpty(t, p.Rows[0].Corrupt)
	require.Equal(t, "not json", p.Rows[0].Raw)
	require.Empty(t, p.Rows[1].Corrupt)
	require.Equal(t, ids[2], p.Rows[1].ID)
	require.Len(t, p.Daily, 90)
	require.EqualValues(t, 3, p.Daily[89].Failed)

	p, err = in.Page(ctx, "page", queue.Dead, 0, 200, ids[1])
	require.NoError(t, err)
	require.Len(t, p.Rows, 1)
	require.Equal(t, ids[1], p.Rows[0].ID)
	_, err = in.Page(ctx, "page", queue.Dead, 0, 201, "")
	require.ErrorIs(t, err, queue.ErrInvalid)
	_, err = in.Page(ctx, "page", queue.Cancelled, 0, 1, "")
	require.ErrorIs(t, err, queue.ErrInvalid)

	big := make([]byte, 70<<10)
	for i := range big {
		big[i] = 'a'
	}
	id, err := q.Enqueue(ctx, execution{WorkflowID: string(big)}, queue.WithHeaders(map[string]string{"k": "v"}))
	require.NoError(t, err)
	d, truncated, err := in.Job(ctx, "page", id)
	require.NoError(t, err)
	require.True(t, truncated)
	require.Len(t, d.Payload, 64<<10)
	require.Equal(t, map[string]string{"k": "v"}, d.Headers)
	require.Equal(t, queue.Pending, d.State)
	d, truncated, err = in.Job(ctx, "page", ids[0])
	require.NoError(t, err)
	require.False(t, truncated)
	require.Equal(t, queue.Dead, d.State)
	require.Equal(t, "boom", d.LastError)
	require.True(t, json.Valid([]byte(d.Payload)))
	_, _, err = in.Job(ctx, "page", "gone")
	require.ErrorIs(t, err, queue.ErrNotFound)
}

func TestAttemptErrors(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "errs", queue.WithBackoff(queue.ConstantBackoff(0)))
	in, err := queue.NewInspector(e.Client, queue.WithNamespace(e.NS))
	require.NoError(t, err)
	id, err := q.Enqueue(ctx, execution{WorkflowID: "flaky"}, queue.WithJobMaxRetries(12))
	require.NoError(t, err)
	for i := 0; i < 12; i++ {
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		_, err = q.Nack(ctx, j, fmt.Errorf("boom %d", i))
		require.NoError(t, err)
	}
	d, _, err := in.Job(ctx, "errs", id)
	require.NoError(t, err)
	require.Len(t, d.Errors, 10) // the last 10, oldest first
	require.Equal(t, "boom 2", d.Errors[0].Error)
	require.Equal(t, 3, d.Errors[0].RetryCount)
	require.Equal(t, "boom 11", d.Errors[9].Error)
	require.Equal(t, queue.EventFailed, d.Errors[9].Kind)
	errKey := e.NS.Prefix + "queue:{errs}:errors"
	require.True(t, e.Client.HExists(ctx, errKey, id).Val())

	// the dead letter takes them along; the hash field goes
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	dead, err := q.Nack(ctx, j, errors.New("last"))
	require.NoError(t, err)
	require.True(t, dead)
	require.False(t, e.Client.HExists(ctx, errKey, id).Val())
	d, _, err = in.Job(ctx, "errs", id)
	require.NoError(t, err)
	require.Equal(t, queue.Dead, d.State)
	require.Len(t, d.Errors, 10)
	require.Equal(t, "last", d.Errors[9].Error)
	require.Equal(t, 13, d.Errors[9].RetryCount)

	// an ack after a failure deletes them; so do delete and purge
	for _, end := range []string{"ack", "delete", "purge", "cancel"} {
		id, err := q.Enqueue(ctx, execution{WorkflowID: end})
		require.NoError(t, err)
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		_, err = q.Nack(ctx, j, errors.New("once"))
		require.NoError(t, err)
		require.True(t, e.Client.HExists(ctx, errKey, id).Val(), end)
		switch end {
		case "ack":
			j, err = q.TryDequeue(ctx)
			require.NoError(t, err)
			require.NoError(t, q.Ack(ctx, j))
		case "delete":
			require.NoError(t, q.Delete(ctx, id))
		case "purge":
			_, err = q.Purge(ctx, queue.Pending, 10)
			require.NoError(t, err)
		case "cancel":
			_, err = q.Cancel(ctx, id)
			require.NoError(t, err)
		}
		require.False(t, e.Client.HExists(ctx, errKey, id).Val(), end)
	}

	// an expired lease counts as an attempt error
	id, err = q.Enqueue(ctx, execution{WorkflowID: "slow"})
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx)
	require.NoError(t, err)
	if e.Real() {
		return
	}
	e.Advance(q.Lease() + time.Second)
	j, err = q.TryDequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, id, j.ID)
	d, _, err = in.Job(ctx, "errs", id)
	require.NoError(t, err)
	require.Len(t, d.Errors, 1)
	require.Equal(t, "lease expired", d.Errors[0].Error)
}
