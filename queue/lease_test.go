package queue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/queue"
)

// A lease ends on the server no earlier than the holder's local deadline
// (its lease counted from before the request): the deadline is the server
// time rounded up, and recovery waits until the server time is strictly
// past it. On miniredis the clock is set to the microsecond.
func TestLeaseNeverEndsBeforeTheHoldersDeadline(t *testing.T) {
	e := harness.New(t)
	if e.Mini == nil {
		t.Skip("sets the server clock; the timing edge test runs on the real backends")
	}
	ctx := e.Ctx()
	const lease = 100*time.Millisecond + 500*time.Microsecond // rounded up to 101ms
	q := newQ(t, e, "edge", queue.WithLease(lease))
	_, err := q.Enqueue(ctx, execution{}, queue.WithID("j"))
	require.NoError(t, err)
	t0 := e.Now().Add(700 * time.Microsecond) // mid-millisecond
	e.Mini.SetTime(t0)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.False(t, j.LeaseDeadline.Before(t0.Add(lease)), "deadline %v before %v", j.LeaseDeadline, t0.Add(lease))
	for _, at := range []time.Time{t0.Add(lease), j.LeaseDeadline} {
		e.Mini.SetTime(at)
		_, err = q.TryDequeue(ctx)
		require.ErrorIs(t, err, queue.ErrEmpty, "recovered at %v, deadline %v", at, j.LeaseDeadline)
	}
	e.Mini.SetTime(j.LeaseDeadline.Add(time.Microsecond))
	j2, err := q.TryDequeue(ctx)
	require.NoError(t, err, "recovered once strictly past the deadline")
	assert.Equal(t, "j", j2.ID)
	// Extend rounds the same way.
	e.Mini.SetTime(j.LeaseDeadline.Add(300 * time.Microsecond))
	require.NoError(t, q.Extend(ctx, j2))
	assert.False(t, j2.LeaseDeadline.Before(j.LeaseDeadline.Add(300*time.Microsecond+lease)))
}

// On a real server: a second consumer never gets a job before the first
// holder's local deadline (lease counted from just before its request), in
// 1,000 rounds at the shortest lease.
func TestLeaseEdgeNoOverlap(t *testing.T) {
	e := harness.New(t)
	if !e.Real() {
		t.Skip("needs a running server clock; miniredis covers the rounding exactly")
	}
	ctx := e.Ctx()
	// A lease that is not a whole number of milliseconds: it must be
	// rounded up on its way to the server.
	const lease = queue.MinLease + 700*time.Microsecond
	q := newQ(t, e, "edge-real", queue.WithLease(lease), queue.WithMaxRetries(queue.MaxRetriesLimit))
	_, err := q.Enqueue(ctx, execution{}, queue.WithID("j"))
	require.NoError(t, err)
	const rounds = 1000
	overlaps := 0
	var earliest time.Duration = math.MaxInt64
	for r := 0; r < rounds; r++ {
		sent := time.Now()
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		_ = j
		for {
			got, err := q.TryDequeue(ctx)
			if errors.Is(err, queue.ErrEmpty) {
				continue
			}
			require.NoError(t, err)
			at := time.Since(sent)
			earliest = min(earliest, at)
			if at < lease {
				overlaps++
			}
			require.NoError(t, q.Release(ctx, got))
			break
		}
	}
	t.Logf("%s: %d rounds, %d overlaps, earliest takeover %v after the holder's send (lease %v)", e.Backend, rounds, overlaps, earliest, lease)
	assert.Zero(t, overlaps)
}

// A job pushed onto queue:{name}:executions in seed 001's own format (an
// LPUSH of the job's JSON, as that system's producers do) is adopted as a
// job, whether a dequeue finds it there or a blocked consumer moves it to
// the inbox; what is not a job is dead-lettered with the reason.
func TestJobsFromSeedProducersAreAdopted(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "n8n")
	wake := e.NS.Prefix + "queue:{n8n}:executions"
	seed := func(id string, prio int) string {
		b, _ := json.Marshal(map[string]any{"id": id, "workflow_id": "wf-" + id, "trigger_type": "webhook",
			"trigger_data": map[string]any{"path": "/hook"}, "priority": prio, "created_at": "2026-01-16T10:00:00Z", "retry_count": 0})
		return string(b)
	}
	require.NoError(t, e.Client.LPush(ctx, wake, seed("s1", 0), seed("s2", 1), "not json").Err())
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, "s2", j.ID, "high priority first")
	assert.Equal(t, "wf-s2", j.Payload.WorkflowID)
	assert.Equal(t, "webhook", j.Payload.TriggerType)
	assert.Equal(t, queue.High, j.Priority)
	assert.Equal(t, 2026, j.CreatedAt.Year())
	require.NoError(t, q.Ack(ctx, j))
	j, err = q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, "s1", j.ID)
	require.NoError(t, q.Ack(ctx, j))
	d, err := q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, d, 1)
	assert.Equal(t, "not json", d[0].Raw)
	assert.True(t, strings.HasPrefix(d[0].LastError, "not a job"))

	// A consumer blocked in Dequeue takes the pushed element to the inbox
	// and adopts it: nothing is lost with the wake-up.
	got := make(chan string, 1)
	go func() {
		j, err := q.Dequeue(ctx)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- j.ID + " " + j.Payload.WorkflowID
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, e.Client.LPush(ctx, wake, seed("s3", -1)).Err())
	select {
	case s := <-got:
		assert.Equal(t, "s3 wf-s3", s)
	case <-time.After(5 * time.Second):
		t.Fatal("Dequeue did not return the adopted job")
	}
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), s.TotalEnqueued)
	assert.Equal(t, int64(1), s.TotalDead)
}

// Times and durations beyond their documented bounds are ErrInvalid, and
// nothing is written.
func TestTimeBounds(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "bounds")
	for name, o := range map[string]queue.EnqueueOption{
		"delay MaxInt64":        queue.WithDelay(math.MaxInt64),
		"delay above the max":   queue.WithDelay(queue.MaxDelay + time.Millisecond),
		"process-at in 9999":    queue.WithProcessAt(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)),
		"unique above the max":  queue.WithUnique(queue.MaxDelay + time.Millisecond),
		"retries above the max": queue.WithJobMaxRetries(queue.MaxRetriesLimit + 1),
	} {
		_, err := q.Enqueue(ctx, execution{}, o, queue.WithID("x"))
		assert.ErrorIs(t, err, queue.ErrInvalid, name)
	}
	for name, o := range map[string]queue.Option{
		"lease below the min":   queue.WithLease(queue.MinLease - 1),
		"lease above the max":   queue.WithLease(queue.MaxLease + 1),
		"cap above the max":     queue.WithDeadLetterCap(queue.MaxDeadCap + 1),
		"payload above the max": queue.WithMaxPayload(queue.MaxPayloadLimit + 1),
		"grace above the max":   queue.WithShutdownGrace(queue.MaxShutdownGrace + 1),
	} {
		_, err := queue.New[execution](e.Client, "bounds", o)
		assert.ErrorIs(t, err, queue.ErrInvalid, name)
	}
	assert.Empty(t, e.Keys(), "nothing written")
	_, err := q.Enqueue(ctx, execution{}, queue.WithID("far"), queue.WithDelay(queue.MaxDelay))
	require.NoError(t, err, "the maximum itself is accepted")
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("past"), queue.WithProcessAt(time.Unix(-1e9, 0)))
	require.NoError(t, err, "a time before 1970 is in the past: ready now")
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, "past", j.ID)
	sch, err := q.List(ctx, queue.Scheduled, 0, 1)
	require.NoError(t, err)
	require.Len(t, sch, 1)
	assert.WithinDuration(t, e.Now().Add(queue.MaxDelay), sch[0].At, time.Minute, fmt.Sprint(sch[0].At))
}
