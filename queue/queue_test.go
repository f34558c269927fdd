package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

type execution struct {
	WorkflowID  string         `json:"workflow_id"`
	TriggerType string         `json:"trigger_type"`
	TriggerData map[string]any `json:"trigger_data"`
}

func newQ(t *testing.T, e *harness.Env, name string, opts ...queue.Option) *queue.Queue[execution] {
	t.Helper()
	q, err := queue.New[execution](e.Client, name, append([]queue.Option{queue.WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return q
}

// persistent reports the keys the package documents as persistent.
func persistent(k string) bool {
	return !strings.Contains(k, ":unique:") && !strings.Contains(k, "queue:dlq:") && !strings.Contains(k, ":reply:")
}

// leftover reports the keys a queue keeps with no job in it: its stats
// hash, its wake-up list, and the reply memos of recent writes (replayWindow TTL).
func leftover(k, name string) bool {
	return strings.HasSuffix(k, "queue:stats:{"+name+"}") || strings.HasSuffix(k, ":executions") || strings.Contains(k, ":reply:") || strings.Contains(k, ":daily:")
}

func TestDocTable(t *testing.T) { harness.CheckDocTable(t, queue.Schema()) }

func TestKeysShareSlotAndNeverCollide(t *testing.T) {
	names := []string{"n8n", "stats", "dlq", "executions", "jobs", "a:b", "x{y}"}
	for _, tags := range []bool{true, false} {
		ns := keys.Namespace{Prefix: "p:", NoHashTags: !tags}
		seen := map[string]string{}
		for _, name := range names {
			var ks []string
			add := func(tm string, args ...string) {
				tp, ok := harness.Registry(t, queue.Schema()).Lookup(tm)
				require.True(t, ok, tm)
				k, err := tp.Key(ns, args...)
				require.NoError(t, err)
				ks = append(ks, k)
			}
			add("queue:{queue_name}:executions", name)
			add("queue:{queue_name}:jobs", name)
			add("queue:{queue_name}:state", name)
			add("queue:{queue_name}:active", name)
			add("queue:stats:{queue_name}", name)
			add("queue:dlq:{queue_name}", name)
			for _, l := range []string{"high", "normal", "low"} {
				add("queue:{queue_name}:priority:{level}", name, l)
			}
			add("queue:{queue_name}:unique:{job_id}", name, "high")
			add("queue:{queue_name}:inbox", name)
			add("queue:{queue_name}:schedules", name)
			add("queue:{queue_name}:progress", name)
			add("queue:{queue_name}:done", name)
			add("queue:{queue_name}:done_at", name)
			add("queue:{queue_name}:rate", name)
			add("queue:{queue_name}:flows", name)
			add("queue:{queue_name}:gactive:{group}", name, "jobs")
			add("queue:{queue_name}:grate:{group}", name, "jobs")
			add("queue:{queue_name}:reply:{request_id}", name, "high")
			if tags {
				assert.True(t, keys.SameSlot(ks...), "queue %q keys span slots: %v", name, ks)
			}
			if name == "stats" || name == "dlq" {
				_, err := queue.New[int](redisNop(), name)
				assert.ErrorIs(t, err, queue.ErrInvalid)
				continue // refused by New, so never built
			}
			for _, k := range ks {
				if prev, dup := seen[k]; dup {
					t.Errorf("tags=%v: key %q built for queue %q and %q", tags, k, prev, name)
				}
				seen[k] = name
			}
		}
	}
}

func TestEnqueueDequeueAck(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "n8n")
	id, err := q.Enqueue(ctx, execution{WorkflowID: "wf-1", TriggerType: "webhook", TriggerData: map[string]any{"a": []any{}}})
	require.NoError(t, err)
	assert.Len(t, id, 36)

	// The stored JSON is the seed's item format.
	raw, err := e.Client.HGet(ctx, e.NS.Prefix+"queue:{n8n}:jobs", id).Result()
	require.NoError(t, err)
	for _, f := range []string{`"id":"` + id + `"`, `"workflow_id":"wf-1"`, `"trigger_type":"webhook"`, `"trigger_data":{"a":[]}`, `"priority":0`, `"created_at":"`, `"retry_count":0`} {
		assert.Contains(t, raw, f)
	}

	before := e.Now()
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	after := e.Now()
	assert.Equal(t, id, j.ID)
	assert.Equal(t, "wf-1", j.Payload.WorkflowID)
	assert.Equal(t, []any{}, j.Payload.TriggerData["a"])
	assert.Greater(t, j.Delivery, int64(0))
	assert.Equal(t, queue.Normal, j.Priority)
	assert.Equal(t, queue.DefaultMaxRetries, j.MaxRetries)
	// the server time of the dequeue, rounded up to the ms, plus the lease
	assert.False(t, j.LeaseDeadline.Before(before.Add(queue.DefaultLease)), "%v", j.LeaseDeadline)
	assert.False(t, j.LeaseDeadline.After(after.Add(queue.DefaultLease+time.Millisecond)), "%v", j.LeaseDeadline)

	_, err = q.TryDequeue(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.InFlight)
	e.RequireTTLs(persistent)

	require.NoError(t, q.Ack(ctx, j))
	assert.ErrorIs(t, q.Ack(ctx, j), queue.ErrLeaseLost)
	s, err = q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.TotalEnqueued)
	assert.Equal(t, int64(1), s.TotalProcessed)
	assert.Equal(t, int64(0), s.TotalFailed)
	assert.Equal(t, int64(0), s.InFlight+s.Pending())
	assert.False(t, s.LastProcessedAt.IsZero())
	h, err := e.Client.HGetAll(ctx, e.NS.Prefix+"queue:stats:{n8n}").Result()
	require.NoError(t, err)
	for _, f := range []string{"total_processed", "avg_process_time_ms", "last_processed_at"} {
		assert.Contains(t, h, f)
	}
	// Only the stats hash and the wake-up list remain.
	for _, k := range e.Keys() {
		assert.True(t, leftover(k, "n8n"), k)
	}
}

func TestPriorityAndFIFO(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "prio")
	var want []string
	order := []queue.Priority{queue.Low, queue.Normal, queue.High, queue.Low, queue.High, queue.Normal, queue.High}
	byPrio := map[queue.Priority][]string{}
	for i, p := range order {
		id := fmt.Sprintf("job-%02d-%s", 20-i, p) // IDs sort against enqueue order
		_, err := q.Enqueue(ctx, execution{WorkflowID: id}, queue.WithID(id), queue.WithPriority(p))
		require.NoError(t, err)
		byPrio[p] = append(byPrio[p], id)
	}
	want = append(append(append(want, byPrio[queue.High]...), byPrio[queue.Normal]...), byPrio[queue.Low]...)
	pend, err := q.List(ctx, queue.Pending, 0, 100)
	require.NoError(t, err)
	require.Len(t, pend, len(want))
	for i := range want {
		assert.Equal(t, want[i], pend[i].ID)
	}
	page, err := q.List(ctx, queue.Pending, 2, 3)
	require.NoError(t, err)
	require.Len(t, page, 3)
	assert.Equal(t, want[2:5], []string{page[0].ID, page[1].ID, page[2].ID})
	var got []string
	for range want {
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		got = append(got, j.ID)
		require.NoError(t, q.Ack(ctx, j))
	}
	assert.Equal(t, want, got)
}

func TestDelayAndProcessAt(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "delay")
	_, err := q.Enqueue(ctx, execution{WorkflowID: "later"}, queue.WithID("later"), queue.WithDelay(time.Second))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, execution{WorkflowID: "at"}, queue.WithID("at"), queue.WithProcessAt(e.Now().Add(-time.Hour)))
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, "at", j.ID)
	_, err = q.TryDequeue(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty)
	sch, err := q.List(ctx, queue.Scheduled, 0, 10)
	require.NoError(t, err)
	require.Len(t, sch, 1)
	assert.Equal(t, "later", sch[0].ID)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Delayed[queue.Normal])
	e.Advance(1100 * time.Millisecond)
	j, err = q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, "later", j.ID)
}

func TestDuplicateAndUniqueWindow(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "uniq")
	_, err := q.Enqueue(ctx, execution{}, queue.WithID("a"))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("a"))
	assert.ErrorIs(t, err, queue.ErrDuplicate, "live ID")

	_, err = q.Enqueue(ctx, execution{}, queue.WithID("u"), queue.WithUnique(time.Second))
	require.NoError(t, err)
	for {
		j, err := q.TryDequeue(ctx)
		if errors.Is(err, queue.ErrEmpty) {
			break
		}
		require.NoError(t, err)
		require.NoError(t, q.Ack(ctx, j))
	}
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("u"), queue.WithUnique(time.Second))
	assert.ErrorIs(t, err, queue.ErrDuplicate, "inside the window, though done")
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("a"))
	assert.NoError(t, err, "done and no window: the ID is free again")
	e.Advance(1100 * time.Millisecond)
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("u"), queue.WithUnique(time.Second))
	assert.NoError(t, err, "after the window")
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(4), s.TotalEnqueued)
}

type unencodable struct {
	C chan int `json:"c"`
}

func TestBadInputWritesNothing(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for _, name := range []string{"", "stats", "dlq"} {
		_, err := queue.New[execution](e.Client, name, queue.WithNamespace(e.NS))
		assert.ErrorIs(t, err, queue.ErrInvalid, "name %q", name)
	}
	_, err := queue.New[execution](e.Client, strings.Repeat("x", 2000), queue.WithNamespace(e.NS))
	assert.ErrorIs(t, err, keys.ErrInvalid)
	_, err = queue.New[execution](e.Client, "q", queue.WithNamespace(keys.Namespace{Prefix: "{bad"}))
	assert.ErrorIs(t, err, keys.ErrInvalid)
	for _, o := range []queue.Option{queue.WithLease(0), queue.WithMaxRetries(-1), queue.WithMaxPayload(0), queue.WithDeadLetterCap(0), queue.WithBackoff(nil), queue.WithCodec(nil), queue.WithShutdownGrace(-1)} {
		_, err = queue.New[execution](e.Client, "q", o)
		assert.ErrorIs(t, err, queue.ErrInvalid)
	}

	q := newQ(t, e, "bad", queue.WithMaxPayload(200))
	cases := map[string]struct {
		o    []queue.EnqueueOption
		want error
	}{
		"negative delay":                     {[]queue.EnqueueOption{queue.WithDelay(-time.Second)}, queue.ErrInvalid},
		"bad priority":                       {[]queue.EnqueueOption{queue.WithPriority(7)}, queue.ErrInvalid},
		"unique without id":                  {[]queue.EnqueueOption{queue.WithUnique(time.Minute)}, queue.ErrInvalid},
		"negative unique":                    {[]queue.EnqueueOption{queue.WithID("x"), queue.WithUnique(-1)}, queue.ErrInvalid},
		"bad max retries":                    {[]queue.EnqueueOption{queue.WithJobMaxRetries(-2)}, queue.ErrInvalid},
		"oversize id":                        {[]queue.EnqueueOption{queue.WithID(strings.Repeat("i", 1025))}, keys.ErrInvalid},
		"invalid utf-8 id":                   {[]queue.EnqueueOption{queue.WithID("\xff")}, keys.ErrInvalid},
		"invalid utf-8 id is ErrInvalid too": {[]queue.EnqueueOption{queue.WithID("\xff")}, queue.ErrInvalid},
		"oversize payload":                   {[]queue.EnqueueOption{queue.WithID("big")}, queue.ErrTooLarge},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := execution{}
			if name == "oversize payload" {
				p.WorkflowID = strings.Repeat("w", 300)
			}
			_, err := q.Enqueue(ctx, p, c.o...)
			assert.ErrorIs(t, err, c.want)
		})
	}
	qu, err := queue.New[unencodable](e.Client, "bad", queue.WithNamespace(e.NS))
	require.NoError(t, err)
	_, err = qu.Enqueue(ctx, unencodable{C: make(chan int)})
	assert.ErrorIs(t, err, queue.ErrInvalid)
	ids, err := q.EnqueueBatch(ctx, []queue.Item[execution]{{Options: []queue.EnqueueOption{queue.WithDelay(-1)}}})
	assert.ErrorIs(t, err, queue.ErrInvalid)
	assert.Equal(t, []string{""}, ids)
	assert.ErrorIs(t, q.Run(ctx, nil, 1), queue.ErrInvalid)
	_, err = q.List(ctx, "nope", 0, 1)
	assert.ErrorIs(t, err, queue.ErrInvalid)
	assert.Empty(t, e.Keys(), "nothing written")
}

func TestEnqueueBatch(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "batch")
	items := make([]queue.Item[execution], 100)
	for i := range items {
		items[i] = queue.Item[execution]{Payload: execution{WorkflowID: fmt.Sprint(i)}, Options: []queue.EnqueueOption{queue.WithID(fmt.Sprintf("b%03d", i))}}
	}
	items[50].Options = []queue.EnqueueOption{queue.WithID("b000")} // duplicate of item 0
	ids, err := q.EnqueueBatch(ctx, items)
	var be *queue.BatchError
	require.ErrorAs(t, err, &be)
	assert.ErrorIs(t, err, queue.ErrDuplicate)
	assert.ErrorIs(t, be.Errs[50], queue.ErrDuplicate)
	assert.Equal(t, "", ids[50])
	assert.Equal(t, "b001", ids[1])
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(99), s.Pending())
	// FIFO across the batch.
	for i := 0; i < 5; i++ {
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("b%03d", i), j.ID)
	}
}

func TestNackRetryDeadLetterRequeue(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "retry", queue.WithBackoff(queue.ConstantBackoff(500*time.Millisecond)))
	id, err := q.Enqueue(ctx, execution{WorkflowID: "flaky"}, queue.WithJobMaxRetries(2), queue.WithPriority(queue.High))
	require.NoError(t, err)
	for attempt := 0; attempt <= 2; attempt++ {
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err, "attempt %d", attempt)
		assert.Equal(t, attempt, j.RetryCount)
		if attempt > 0 {
			assert.Equal(t, fmt.Sprintf("boom %d", attempt-1), j.LastError)
		}
		dead, err := q.Nack(ctx, j, fmt.Errorf("boom %d", attempt))
		require.NoError(t, err)
		assert.Equal(t, attempt == 2, dead)
		if !dead {
			_, err = q.TryDequeue(ctx)
			assert.ErrorIs(t, err, queue.ErrEmpty, "backing off")
			info, err := q.Peek(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, queue.Scheduled, info.State)
			e.Advance(600 * time.Millisecond)
		}
	}
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), s.TotalFailed)
	assert.Equal(t, int64(1), s.TotalDead)
	assert.Equal(t, int64(1), s.Dead)
	assert.Equal(t, int64(0), s.TotalProcessed)

	dead, err := q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, id, dead[0].ID)
	assert.Equal(t, "boom 2", dead[0].LastError)
	assert.Equal(t, 3, dead[0].RetryCount)
	assert.Equal(t, "flaky", dead[0].Payload.WorkflowID)
	assert.Equal(t, queue.High, dead[0].Priority)
	ttl, err := e.Client.TTL(ctx, e.NS.Prefix+"queue:dlq:{retry}").Result()
	require.NoError(t, err)
	assert.InDelta(t, queue.DeadTTL.Seconds(), ttl.Seconds(), 5)
	e.RequireTTLs(persistent)

	assert.ErrorIs(t, q.Requeue(ctx, "nope"), queue.ErrNotFound)
	require.NoError(t, q.Requeue(ctx, id))
	assert.ErrorIs(t, q.Requeue(ctx, id), queue.ErrNotFound)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, id, j.ID)
	assert.Equal(t, 0, j.RetryCount)
	assert.Equal(t, queue.High, j.Priority)
	require.NoError(t, q.Ack(ctx, j))
	s, err = q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.TotalProcessed)
	assert.Equal(t, int64(0), s.Dead)
}

func TestDeadLetterCap(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "cap", queue.WithDeadLetterCap(3))
	for i := 0; i < 5; i++ {
		_, err := q.Enqueue(ctx, execution{}, queue.WithID(fmt.Sprint(i)), queue.WithJobMaxRetries(0))
		require.NoError(t, err)
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		dead, err := q.Nack(ctx, j, errors.New("no"))
		require.NoError(t, err)
		assert.True(t, dead)
	}
	d, err := q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, d, 3)
	assert.Equal(t, []string{"4", "3", "2"}, []string{d[0].ID, d[1].ID, d[2].ID})
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(5), s.TotalDead)
	assert.Equal(t, int64(2), s.TotalDeadTrimmed, "every dropped dead letter is counted")
	assert.Equal(t, s.TotalDead-s.TotalDeadTrimmed, s.Dead)
	require.NoError(t, q.Delete(ctx, "3"))
	assert.ErrorIs(t, q.Delete(ctx, "3"), queue.ErrNotFound)

	// A dead letter from lease recovery (the dequeue script) is trimmed
	// and counted the same way.
	q2 := newQ(t, e, "cap2", queue.WithDeadLetterCap(1), queue.WithLease(300*time.Millisecond))
	for _, id := range []string{"x", "y"} {
		_, err := q2.Enqueue(ctx, execution{}, queue.WithID(id), queue.WithJobMaxRetries(0))
		require.NoError(t, err)
	}
	_, err = q2.TryDequeue(ctx)
	require.NoError(t, err)
	_, err = q2.TryDequeue(ctx)
	require.NoError(t, err)
	e.Advance(500 * time.Millisecond)
	_, err = q2.TryDequeue(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty)
	s, err = q2.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.TotalDead)
	assert.Equal(t, int64(1), s.TotalDeadTrimmed)
	assert.Equal(t, int64(1), s.Dead)
}

func TestLeaseExpiryRedelivers(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "lease", queue.WithLease(500*time.Millisecond))
	id, err := q.Enqueue(ctx, execution{WorkflowID: "crash"})
	require.NoError(t, err)
	// A worker takes the job and dies without acking.
	crashed, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	_, err = q.TryDequeue(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty, "leased")
	act, err := q.List(ctx, queue.Active, 0, 10)
	require.NoError(t, err)
	require.Len(t, act, 1)
	e.Advance(700 * time.Millisecond)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, id, j.ID)
	assert.Greater(t, j.Delivery, crashed.Delivery)
	assert.Equal(t, 1, j.RetryCount)
	assert.Equal(t, "lease expired", j.LastError)
	// The crashed worker's late ack must not ack the new delivery.
	assert.ErrorIs(t, q.Ack(ctx, crashed), queue.ErrLeaseLost)
	assert.ErrorIs(t, q.Extend(ctx, crashed), queue.ErrLeaseLost)
	require.NoError(t, q.Extend(ctx, j))
	require.NoError(t, q.Ack(ctx, j))
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.TotalProcessed)
	assert.Equal(t, int64(1), s.TotalFailed)
}

func TestDeleteAndPeek(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "del")
	_, err := q.Enqueue(ctx, execution{WorkflowID: "w"}, queue.WithID("p"))
	require.NoError(t, err)
	info, err := q.Peek(ctx, "p")
	require.NoError(t, err)
	assert.Equal(t, queue.Pending, info.State)
	assert.Equal(t, "w", info.Payload.WorkflowID)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	info, err = q.Peek(ctx, "p")
	require.NoError(t, err)
	assert.Equal(t, queue.Active, info.State)
	require.NoError(t, q.Delete(ctx, "p"))
	assert.ErrorIs(t, q.Ack(ctx, j), queue.ErrLeaseLost)
	_, err = q.Peek(ctx, "p")
	assert.ErrorIs(t, err, queue.ErrNotFound)
	assert.ErrorIs(t, q.Delete(ctx, "p"), queue.ErrNotFound)
	// Nothing of the job is left: only the stats hash and the wake-up list.
	for _, k := range e.Keys() {
		assert.True(t, leftover(k, "del"), k)
	}

	// The ID is re-enqueued and delivered to another worker: the stale
	// holder of the deleted job must not settle the new delivery.
	_, err = q.Enqueue(ctx, execution{WorkflowID: "w2"}, queue.WithID("p"))
	require.NoError(t, err)
	j2, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, j.Delivery, j2.Delivery)
	assert.ErrorIs(t, q.Ack(ctx, j), queue.ErrLeaseLost)
	_, err = q.Nack(ctx, j, errors.New("stale"))
	assert.ErrorIs(t, err, queue.ErrLeaseLost)
	assert.ErrorIs(t, q.Release(ctx, j), queue.ErrLeaseLost)
	info, err = q.Peek(ctx, "p")
	require.NoError(t, err)
	assert.Equal(t, queue.Active, info.State, "still leased to the new holder")
	require.NoError(t, q.Ack(ctx, j2))
}

func TestStaleHolderAfterRequeue(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "stale", queue.WithLease(300*time.Millisecond))
	_, err := q.Enqueue(ctx, execution{}, queue.WithID("r"), queue.WithJobMaxRetries(0))
	require.NoError(t, err)
	slow, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	e.Advance(500 * time.Millisecond) // the lease runs out: dead-lettered by recovery
	_, err = q.TryDequeue(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty)
	require.NoError(t, q.Requeue(ctx, "r"))
	fresh, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Greater(t, fresh.Delivery, slow.Delivery)
	// The slow worker finally finishes: its ack must not count for the
	// fresh delivery, which is still leased.
	assert.ErrorIs(t, q.Ack(ctx, slow), queue.ErrLeaseLost)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.InFlight)
	assert.Equal(t, int64(0), s.TotalProcessed)
	require.NoError(t, q.Ack(ctx, fresh))
	s, err = q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.TotalProcessed)
	assert.Equal(t, int64(1), s.TotalFailed)
	assert.Equal(t, int64(1), s.TotalDead)
}

func TestCorruptDataIsAnErrorNamingTheKey(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "corrupt")
	_, err := q.Enqueue(ctx, execution{}, queue.WithID("c"))
	require.NoError(t, err)
	jobs := e.NS.Prefix + "queue:{corrupt}:jobs"
	require.NoError(t, e.Client.HSet(ctx, jobs, "c", "{not json").Err())
	_, err = q.TryDequeue(ctx)
	var ce *keys.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, jobs, ce.Key)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Dead, "moved to the dead letters, not redelivered")
	assert.Equal(t, int64(0), s.InFlight)
	d, err := q.List(ctx, queue.Dead, 0, 1)
	require.NoError(t, err)
	require.Len(t, d, 1)
	assert.Equal(t, "c", d[0].ID)
	assert.Equal(t, "{not json", d[0].Raw)
	assert.Contains(t, d[0].LastError, "corrupt")
	assert.ErrorIs(t, q.Requeue(ctx, "c"), keys.ErrCorrupt, "nothing to requeue")

	// A job state that does not parse: dead-lettered, not a stuck queue.
	_, err = q.Enqueue(ctx, execution{WorkflowID: "s"}, queue.WithID("s"))
	require.NoError(t, err)
	require.NoError(t, e.Client.HSet(ctx, e.NS.Prefix+"queue:{corrupt}:state", "s", "garbage").Err())
	_, err = q.TryDequeue(ctx)
	require.ErrorAs(t, err, &ce, "reported, not ErrEmpty")
	assert.Equal(t, e.NS.Prefix+"queue:{corrupt}:state", ce.Key)
	assert.NotErrorIs(t, err, queue.ErrEmpty)
	d, err = q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, d, 2)
	assert.Equal(t, "s", d[0].ID)
	assert.Equal(t, "corrupt job state", d[0].LastError)
	assert.Equal(t, "s", d[0].Payload.WorkflowID)

	// Both the state and the JSON broken: still dead-lettered, and the
	// dead-letter list stays readable (the text is kept under "raw").
	_, err = q.Enqueue(ctx, execution{}, queue.WithID("both"))
	require.NoError(t, err)
	require.NoError(t, e.Client.HSet(ctx, jobs, "both", "{broken").Err())
	require.NoError(t, e.Client.HSet(ctx, e.NS.Prefix+"queue:{corrupt}:state", "both", "garbage").Err())
	_, err = q.TryDequeue(ctx)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
	d, err = q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err, "one bad job must not make the dead letters unreadable")
	require.Len(t, d, 3)
	assert.Equal(t, "both", d[0].ID)
	assert.Equal(t, "{broken", d[0].Raw)
	// A readable entry whose job is not this queue's type: shown raw.
	require.NoError(t, e.Client.LPush(ctx, e.NS.Prefix+"queue:dlq:{corrupt}",
		`{"id":"f","error":"x","failed_at":1,"retry_count":0,"max_retries":0,"level":"low","job":[1]}`).Err())
	d, err = q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, d, 4)
	assert.Equal(t, "f", d[0].ID)
	assert.Equal(t, "[1]", d[0].Raw)
	require.NoError(t, q.Delete(ctx, "f"))

	// ... and when it breaks while the job is leased, lease recovery
	// dead-letters it too.
	q2 := newQ(t, e, "corrupt2", queue.WithLease(500*time.Millisecond))
	_, err = q2.Enqueue(ctx, execution{WorkflowID: "l"}, queue.WithID("l"))
	require.NoError(t, err)
	_, err = q2.TryDequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Client.HSet(ctx, e.NS.Prefix+"queue:{corrupt2}:state", "l", "garbage").Err())
	e.Advance(700 * time.Millisecond)
	_, err = q2.TryDequeue(ctx)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, e.NS.Prefix+"queue:{corrupt2}:state", ce.Key)
	d, err = q2.List(ctx, queue.Dead, 0, 1)
	require.NoError(t, err)
	require.Len(t, d, 1)
	assert.Equal(t, "l", d[0].ID)
	assert.Equal(t, "corrupt job state", d[0].LastError)

	require.NoError(t, e.Client.HSet(ctx, e.NS.Prefix+"queue:stats:{corrupt}", "total_processed", "many").Err())
	_, err = q.Stats(ctx)
	assert.ErrorIs(t, err, keys.ErrCorrupt)
}

func TestDequeueBlocksUntilEnqueue(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "block")
	got := make(chan string, 1)
	go func() {
		j, err := q.Dequeue(ctx)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- j.ID
	}()
	time.Sleep(50 * time.Millisecond)
	_, err := q.Enqueue(ctx, execution{}, queue.WithID("wake"))
	require.NoError(t, err)
	select {
	case id := <-got:
		assert.Equal(t, "wake", id)
	case <-time.After(5 * time.Second):
		t.Fatal("Dequeue did not return")
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = q.Dequeue(cctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// upperCodec stores strings as raw upper-case bytes: not JSON.
type upperCodec struct{}

func (upperCodec) Marshal(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, errors.New("strings only")
	}
	return []byte(strings.ToUpper(s)), nil
}

func (upperCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*string)
	if !ok {
		return errors.New("strings only")
	}
	*p = string(data)
	return nil
}

func TestCustomCodec(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q, err := queue.New[string](e.Client, "codec", queue.WithNamespace(e.NS), queue.WithCodec(upperCodec{}))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, "hello", queue.WithID("c1"))
	require.NoError(t, err)
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, "HELLO", j.Payload)
	require.NoError(t, q.Ack(ctx, j))
}

func TestPurgeByState(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "purge")
	for i := 0; i < 5; i++ {
		_, err := q.Enqueue(ctx, execution{}, queue.WithID(fmt.Sprint("p", i)), queue.WithPriority(queue.Priority(-(i % 2))))
		require.NoError(t, err)
		_, err = q.Enqueue(ctx, execution{}, queue.WithID(fmt.Sprint("s", i)), queue.WithDelay(time.Hour))
		require.NoError(t, err)
	}
	for i := 0; i < 3; i++ {
		_, err := q.Enqueue(ctx, execution{}, queue.WithID(fmt.Sprint("d", i)), queue.WithJobMaxRetries(0), queue.WithPriority(queue.High))
		require.NoError(t, err)
		j, err := q.TryDequeue(ctx)
		require.NoError(t, err)
		_, err = q.Nack(ctx, j, errors.New("x"))
		require.NoError(t, err)
	}
	active, err := q.TryDequeue(ctx)
	require.NoError(t, err)

	_, err = q.Purge(ctx, queue.Pending, 0)
	assert.ErrorIs(t, err, queue.ErrInvalid)
	n, err := q.Purge(ctx, queue.Pending, 2)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = q.Purge(ctx, queue.Scheduled, 100)
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	n, err = q.Purge(ctx, queue.Dead, 2)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	d, err := q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, d, 1)
	assert.Equal(t, "d2", d[0].ID, "oldest purged first")
	n, err = q.Purge(ctx, queue.Active, 10)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.ErrorIs(t, q.Ack(ctx, active), queue.ErrLeaseLost)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.Pending(), "5 pending - 1 leased - 2 purged")
	assert.Equal(t, int64(0), s.Delayed[queue.Normal]+s.InFlight)
	assert.Equal(t, int64(1), s.Dead)
}

func TestEnqueueBatchAfterScriptFlush(t *testing.T) {
	e := harness.New(t)
	if e.Mini == nil {
		t.Skip("SCRIPT FLUSH would disturb other tests on a shared server; covered on miniredis")
	}
	ctx := e.Ctx()
	q := newQ(t, e, "noscript")
	require.NoError(t, e.Client.ScriptFlush(ctx).Err())
	ids, err := q.EnqueueBatch(ctx, []queue.Item[execution]{{}, {}, {}})
	require.NoError(t, err, "NOSCRIPT falls back to EVAL")
	assert.Len(t, ids, 3)
	s, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), s.Pending())
}

// An empty WithID is a caller's idempotency key that came out empty: it
// is refused, not replaced by a random ID (which would lose the
// deduplication silently).
func TestEnqueueEmptyIDIsInvalid(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "emptyid")
	for name, o := range map[string][]queue.EnqueueOption{
		"alone":       {queue.WithID("")},
		"with unique": {queue.WithID(""), queue.WithUnique(time.Minute)},
		"last wins":   {queue.WithID("x"), queue.WithID("")},
	} {
		id, err := q.Enqueue(ctx, execution{}, o...)
		assert.ErrorIs(t, err, queue.ErrInvalid, name)
		assert.Empty(t, id, name)
	}
	ids, err := q.EnqueueBatch(ctx, []queue.Item[execution]{{Options: []queue.EnqueueOption{queue.WithID("")}}})
	assert.ErrorIs(t, err, queue.ErrInvalid)
	assert.Equal(t, []string{""}, ids)
	_, _, err = q.EnqueueFlow(ctx, queue.Item[execution]{}, []queue.Item[execution]{{Options: []queue.EnqueueOption{queue.WithID("")}}}, queue.FailParent)
	assert.ErrorIs(t, err, queue.ErrInvalid)
	assert.Empty(t, e.Keys(), "nothing written")
}
