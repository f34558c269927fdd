package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// seedItem is one item of seed 001 §5's executions list, byte for byte
// as a Node producer writes it (JSON.stringify of the documented object,
// created_at from toISOString).
func seedItem(id string, prio int) string {
	return `{"id":"` + id + `","workflow_id":"wf-` + id + `","trigger_type":"webhook","trigger_data":{"path":"/hook/` + id +
		`"},"priority":` + fmt.Sprint(prio) + `,"created_at":"2026-01-16T10:00:00.000Z","retry_count":0}`
}

// modes are the two ways a Go worker shares the executions list with a
// Node producer: the default (the list also holds the wake-up token) and
// WithSeedConsumers (the token lives elsewhere).
var modes = map[string][]queue.Option{
	"default":           nil,
	"WithSeedConsumers": {queue.WithSeedConsumers()},
}

// Items a Node producer LPUSHes onto the executions list, while many Go
// workers run, are each run exactly once with the item's fields decoded,
// and counted as enqueued and processed.
func TestSeedItemsRunOnceOnConcurrentWorkers(t *testing.T) {
	for mode, opts := range modes {
		t.Run(mode, func(t *testing.T) {
			e := harness.New(t)
			ctx, cancel := context.WithTimeout(e.Ctx(), 60*time.Second)
			defer cancel()
			q := newQ(t, e, "n8n", opts...)
			list := e.NS.Prefix + "queue:{n8n}:executions"
			const n, workers = 300, 8
			var mu sync.Mutex
			seen := map[string]int{}
			bad := []string{}
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						j, err := q.Dequeue(ctx)
						if err != nil {
							return
						}
						mu.Lock()
						seen[j.ID]++
						if j.Payload.WorkflowID != "wf-"+j.ID || j.Payload.TriggerType != "webhook" || j.Payload.TriggerData["path"] != "/hook/"+j.ID {
							bad = append(bad, fmt.Sprintf("%s: %+v", j.ID, j.Payload))
						}
						done := len(seen) == n
						mu.Unlock()
						assert.NoError(t, q.Ack(ctx, j))
						if done {
							cancel()
						}
					}
				}()
			}
			// The producer, as seed 001's: one LPUSH per item, some in
			// bursts, while the workers wait and work.
			for i := 0; i < n; i += 3 {
				require.NoError(t, e.Client.LPush(ctx, list, seedItem(fmt.Sprintf("s%03d", i), 0), seedItem(fmt.Sprintf("s%03d", i+1), 0), seedItem(fmt.Sprintf("s%03d", i+2), 0)).Err())
				if i%30 == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
			wg.Wait()
			require.Len(t, seen, n, "every item delivered")
			for id, c := range seen {
				assert.Equal(t, 1, c, "item %s delivered %d times", id, c)
			}
			assert.Empty(t, bad, "payloads decoded")
			s, err := q.Stats(context.Background())
			require.NoError(t, err)
			assert.Equal(t, int64(n), s.TotalEnqueued)
			assert.Equal(t, int64(n), s.TotalProcessed)
			if mode == "WithSeedConsumers" {
				assert.Zero(t, e.Client.LLen(context.Background(), list).Val(), "the list is drained and never holds a token")
			}
		})
	}
}

// One worker takes the items in the order the producer pushed them (the
// seed's FIFO: LPUSH, then the consumer's RPOP), within a priority; the
// forms a Node producer may give created_at and priority are read.
func TestSeedItemsFIFOAndFields(t *testing.T) {
	for mode, opts := range modes {
		t.Run(mode, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			q := newQ(t, e, "n8n", opts...)
			list := e.NS.Prefix + "queue:{n8n}:executions"
			for i := 0; i < 5; i++ {
				require.NoError(t, e.Client.LPush(ctx, list, seedItem(fmt.Sprintf("f%d", i), 0)).Err())
			}
			// Date.now() as a number and as a string; the level's name.
			require.NoError(t, e.Client.LPush(ctx, list,
				`{"id":"ms","workflow_id":"wf-ms","trigger_type":"manual","trigger_data":{},"priority":"high","created_at":1768557600123,"retry_count":0}`,
				`{"id":"mss","workflow_id":"wf-mss","trigger_type":"schedule","trigger_data":{},"priority":-1,"created_at":"1768557600123","retry_count":2}`).Err())
			var got []string
			for {
				j, err := q.TryDequeue(ctx)
				if errors.Is(err, queue.ErrEmpty) {
					break
				}
				require.NoError(t, err)
				got = append(got, j.ID)
				switch j.ID {
				case "ms":
					assert.Equal(t, queue.High, j.Priority)
					assert.Equal(t, time.UnixMilli(1768557600000).UTC(), j.CreatedAt.UTC(), "Unix ms, to the second")
				case "mss":
					assert.Equal(t, queue.Low, j.Priority)
					assert.Equal(t, 2, j.RetryCount)
					assert.Equal(t, time.UnixMilli(1768557600000).UTC(), j.CreatedAt.UTC())
				default:
					assert.Equal(t, time.Date(2026, 1, 16, 10, 0, 0, 0, time.UTC), j.CreatedAt.UTC())
				}
				require.NoError(t, q.Ack(ctx, j))
			}
			assert.Equal(t, []string{"ms", "f0", "f1", "f2", "f3", "f4", "mss"}, got)
		})
	}
}

// A seed item whose created_at Go's time.Time cannot read back (an
// offset without its colon, trailing text, a day the month lacks, an
// hour past 23) is delivered with the adoption's time, as the script
// promises ("else now"), never dead-lettered unrun; the offsets and
// fractions Go reads are kept.
func TestSeedItemsOddCreatedAt(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	q := newQ(t, e, "n8n")
	list := e.NS.Prefix + "queue:{n8n}:executions"
	item := func(id, created string) string {
		return `{"id":"` + id + `","workflow_id":"w","trigger_type":"manual","trigger_data":{},"priority":0,"created_at":"` + created + `","retry_count":0}`
	}
	odd := map[string]string{"nocolon": "2026-01-16T10:00:00+0000", "junk": "2026-01-16T10:00:00Zjunk",
		"feb30": "2026-02-30T10:00:00Z", "hour24": "2026-01-16T24:00:00Z"}
	kept := map[string]time.Time{"offset": time.Date(2026, 1, 16, 9, 0, 0, 0, time.UTC), "fraction": time.Date(2026, 1, 16, 10, 0, 0, 500000000, time.UTC),
		"leapday": time.Date(2024, 2, 29, 10, 0, 0, 0, time.UTC)}
	raw := map[string]string{"offset": "2026-01-16T10:00:00+01:00", "fraction": "2026-01-16T10:00:00.5Z", "leapday": "2024-02-29T10:00:00Z"}
	for id, c := range odd {
		require.NoError(t, e.Client.LPush(ctx, list, item(id, c)).Err())
	}
	for id, c := range raw {
		require.NoError(t, e.Client.LPush(ctx, list, item(id, c)).Err())
	}
	seen := 0
	for {
		j, err := q.TryDequeue(ctx)
		if errors.Is(err, queue.ErrEmpty) {
			break
		}
		require.NoError(t, err)
		seen++
		if want, ok := kept[j.ID]; ok {
			assert.True(t, want.Equal(j.CreatedAt), "%s: %v", j.ID, j.CreatedAt)
		} else {
			assert.WithinDuration(t, e.Now(), j.CreatedAt, time.Minute, j.ID)
		}
		require.NoError(t, q.Ack(ctx, j))
	}
	assert.Equal(t, len(odd)+len(raw), seen, "every item delivered")
	d, err := q.List(ctx, queue.Dead, 0, 10)
	require.NoError(t, err)
	assert.Empty(t, d)
}

// Whatever a producer pushes that is not a job the queue can run is
// dead-lettered with the reason, never dropped, and the dead letters and
// the stats hash stay readable as JSON objects and counts.
func TestSeedItemsMalformedAreDeadLettered(t *testing.T) {
	for mode, opts := range modes {
		t.Run(mode, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			q := newQ(t, e, "n8n", opts...)
			list := e.NS.Prefix + "queue:{n8n}:executions"
			require.NoError(t, e.Client.LPush(ctx, list, seedItem("live", 0)).Err())
			j, err := q.TryDequeue(ctx)
			require.NoError(t, err)
			require.Equal(t, "live", j.ID)
			require.NoError(t, e.Client.LPush(ctx, list, "not json", `[1,2]`, `"text"`, seedItem("live", 0),
				`{"id":"typed","workflow_id":5,"trigger_type":"webhook","trigger_data":{},"priority":0,"created_at":"2026-01-16T10:00:00.000Z","retry_count":0}`).Err())
			var errs []error
			for {
				j, err := q.TryDequeue(ctx)
				if errors.Is(err, queue.ErrEmpty) {
					break
				}
				if err != nil {
					errs = append(errs, err)
					continue
				}
				t.Fatalf("delivered %s", j.ID)
			}
			require.NotEmpty(t, errs)
			assert.ErrorIs(t, errs[len(errs)-1], keys.ErrCorrupt, "the undecodable payload is reported")
			require.NoError(t, q.Ack(ctx, j))

			d, err := q.List(ctx, queue.Dead, 0, 10)
			require.NoError(t, err)
			why := map[string]string{}
			for _, x := range d {
				why[x.Raw+x.ID] = x.LastError
			}
			require.Len(t, d, 5, "%v", why)
			reasons := strings.Join(func() []string {
				var r []string
				for _, x := range d {
					r = append(r, x.LastError)
				}
				return r
			}(), "\n")
			assert.Equal(t, 3, strings.Count(reasons, "not a job"), reasons)
			assert.Contains(t, reasons, "a live job has its ID")
			assert.Contains(t, reasons, "corrupt: ")

			// As a Node reader sees them: each dead letter a JSON object
			// with id, error and failed_at; the stats hash's seed fields
			// counts (and the last run's time, Unix ms).
			raw, err := e.Client.LRange(ctx, e.NS.Prefix+"queue:dlq:{n8n}", 0, -1).Result()
			require.NoError(t, err)
			require.Len(t, raw, 5)
			for _, r := range raw {
				var v map[string]any
				require.NoError(t, json.Unmarshal([]byte(r), &v), r)
				assert.NotEmpty(t, v["error"], r)
				assert.IsType(t, float64(0), v["failed_at"], r)
				assert.Contains(t, v, "id", r)
			}
			h, err := e.Client.HGetAll(ctx, e.NS.Prefix+"queue:stats:{n8n}").Result()
			require.NoError(t, err)
			assert.Equal(t, "1", h["total_processed"])
			assert.Regexp(t, `^\d+$`, h["last_processed_at"])
			assert.Regexp(t, `^\d+(\.\d+)?$`, h["avg_process_time_ms"])
			s, err := q.Stats(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(5), s.TotalDead)
		})
	}
}

// isoMS is JavaScript's toISOString form.
var isoMS = regexp.MustCompile(`"created_at":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"`)

// Handoff pushes the seed's exact item format onto the executions list,
// where a Node consumer's RPOP takes the items in the order handed off;
// bad input is ErrInvalid with nothing written.
func TestHandoffWritesTheSeedItem(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	list := e.NS.Prefix + "queue:{n8n}:executions"

	plain := newQ(t, e, "n8n")
	_, err := plain.Handoff(ctx, execution{WorkflowID: "x"})
	assert.ErrorIs(t, err, queue.ErrInvalid, "without WithSeedConsumers")
	q := newQ(t, e, "n8n", queue.WithSeedConsumers(), queue.WithMaxPayload(400))
	for name, o := range map[string]queue.EnqueueOption{
		"delay": queue.WithDelay(time.Second), "unique": queue.WithUnique(time.Second), "retries": queue.WithJobMaxRetries(1),
		"group": queue.WithGroup("g"), "headers": queue.WithHeaders(map[string]string{"a": "b"}), "timeout": queue.WithTimeout(time.Second),
		"process-at": queue.WithProcessAt(time.Now().Add(time.Hour)), "empty id": queue.WithID(""), "priority": queue.WithPriority(7),
	} {
		_, err := q.Handoff(ctx, execution{WorkflowID: "x"}, o)
		assert.ErrorIs(t, err, queue.ErrInvalid, name)
	}
	_, err = q.Handoff(ctx, execution{WorkflowID: strings.Repeat("x", 400)})
	assert.ErrorIs(t, err, queue.ErrTooLarge)
	withID, err := queue.New[map[string]any](e.Client, "n8n", queue.WithNamespace(e.NS), queue.WithSeedConsumers())
	require.NoError(t, err)
	_, err = withID.Handoff(ctx, map[string]any{"workflow_id": "x", "retry_count": 3})
	assert.ErrorIs(t, err, queue.ErrInvalid, "a payload with the item's own field")
	str, err := queue.New[string](e.Client, "n8n", queue.WithNamespace(e.NS), queue.WithSeedConsumers())
	require.NoError(t, err)
	_, err = str.Handoff(ctx, "wf")
	assert.ErrorIs(t, err, queue.ErrInvalid, "a payload that is not an object")
	assert.Empty(t, e.Keys(), "nothing written")

	before := time.Now().Add(-time.Second)
	id1, err := q.Handoff(ctx, execution{WorkflowID: "wf-1", TriggerType: "webhook", TriggerData: map[string]any{"path": "/a"}})
	require.NoError(t, err)
	id2, err := q.Handoff(ctx, execution{WorkflowID: "wf-2", TriggerType: "schedule", TriggerData: map[string]any{}}, queue.WithID("job-2"), queue.WithPriority(queue.High))
	require.NoError(t, err)
	require.Equal(t, "job-2", id2)
	id3, err := q.Handoff(ctx, execution{WorkflowID: "wf-3", TriggerType: "manual"}, queue.WithPriority(queue.Low))
	require.NoError(t, err)

	want := []string{
		`{"id":"` + id1 + `","workflow_id":"wf-1","trigger_type":"webhook","trigger_data":{"path":"/a"},"priority":0,"created_at":"%s","retry_count":0}`,
		`{"id":"job-2","workflow_id":"wf-2","trigger_type":"schedule","trigger_data":{},"priority":1,"created_at":"%s","retry_count":0}`,
		`{"id":"` + id3 + `","workflow_id":"wf-3","trigger_type":"manual","trigger_data":null,"priority":-1,"created_at":"%s","retry_count":0}`,
	}
	for i, w := range want {
		got, err := e.Client.RPop(ctx, list).Result() // the seed's consumer
		require.NoError(t, err, "item %d", i)
		m := isoMS.FindStringSubmatch(got)
		require.NotNil(t, m, got)
		at, err := time.Parse(time.RFC3339, m[1])
		require.NoError(t, err)
		assert.WithinDuration(t, before, at, 10*time.Second)
		assert.Equal(t, fmt.Sprintf(w, m[1]), got, "item %d, byte for byte", i)
	}
	assert.Zero(t, e.Client.LLen(ctx, list).Val())
}

// A Handoff whose reply is lost, and which go-redis resends, pushes one
// item.
func TestHandoffResendPushesOnce(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	q, err := queue.New[execution](pc, "n8n", queue.WithNamespace(e.NS), queue.WithSeedConsumers())
	require.NoError(t, err)
	p.LoseReply("wf-resent")
	_, err = q.Handoff(ctx, execution{WorkflowID: "wf-resent"})
	require.NoError(t, err)
	require.Equal(t, int64(1), p.Lost())
	assert.Equal(t, int64(1), e.Client.LLen(ctx, e.NS.Prefix+"queue:{n8n}:executions").Val())
}

// With WithSeedConsumers no Go operation puts the wake-up token on the
// executions list: a Node consumer popping it beside Go workers, while
// Go enqueues, hands off, releases, pauses and resumes, only ever gets
// items, and every item runs once, on one side or the other.
func TestSeedConsumersNeverPopAToken(t *testing.T) {
	e := harness.New(t)
	ctx, cancel := context.WithTimeout(e.Ctx(), 60*time.Second)
	defer cancel()
	q := newQ(t, e, "n8n", queue.WithSeedConsumers(), queue.WithGlobalConcurrency(3))
	list := e.NS.Prefix + "queue:{n8n}:executions"
	const handoffs, pushes, enqueues = 60, 60, 60
	var mu sync.Mutex
	ran := map[string]int{}
	var notItems []string
	record := func(id string) {
		mu.Lock()
		ran[id]++
		mu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// The seed's consumer: RPOP, JSON.parse, run.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			v, err := e.Client.RPop(ctx, list).Result()
			if err != nil {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
					continue
				}
			}
			var item map[string]any
			if json.Unmarshal([]byte(v), &item) != nil || item["id"] == nil || item["workflow_id"] == nil {
				mu.Lock()
				notItems = append(notItems, v)
				mu.Unlock()
				continue
			}
			record(item["id"].(string))
		}
	}()
	released := sync.Map{}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, err := q.Dequeue(ctx)
				if err != nil {
					return
				}
				// some jobs are given back once: a settle that wakes a
				// consumer (the queue has a limit)
				// the test cancels ctx once the last job is recorded,
				// which may be this one, before its Ack
				settled := func(err error) {
					if !errors.Is(err, context.Canceled) {
						assert.NoError(t, err)
					}
				}
				if _, again := released.LoadOrStore(j.ID, true); !again && strings.HasSuffix(j.ID, "7") {
					settled(q.Release(ctx, j))
					continue
				}
				record(j.ID)
				settled(q.Ack(ctx, j))
			}
		}()
	}
	for i := 0; i < handoffs; i++ {
		_, err := q.Handoff(ctx, execution{WorkflowID: "h"}, queue.WithID(fmt.Sprintf("h%02d", i)))
		require.NoError(t, err)
		require.NoError(t, e.Client.LPush(ctx, list, seedItem(fmt.Sprintf("n%02d", i), 0)).Err())
		_, err = q.Enqueue(ctx, execution{WorkflowID: "e"}, queue.WithID(fmt.Sprintf("e%02d", i)))
		require.NoError(t, err)
		if i == handoffs/2 {
			_, err := q.Pause(ctx)
			require.NoError(t, err)
			time.Sleep(20 * time.Millisecond)
			_, err = q.Resume(ctx)
			require.NoError(t, err)
		}
	}
	harness.WaitFor(t, "every job run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == handoffs+pushes+enqueues
	})
	close(stop)
	cancel()
	wg.Wait()
	assert.Empty(t, notItems, "the seed's consumer popped something that is not an item")
	for id, c := range ran {
		assert.Equal(t, 1, c, "job %s ran %d times", id, c)
	}
	for i := 0; i < enqueues; i++ {
		assert.Contains(t, ran, fmt.Sprintf("e%02d", i))
	}
}

// With keys.Namespace{NoHashTags: true} the bridge's keys are the seed's
// own bytes: queue:n8n:executions, queue:stats:n8n, queue:dlq:n8n.
func TestSeedBridgeKeysAreTheSeeds(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Cluster {
		t.Skip("seed-byte-identical keys (NoHashTags) are for a standalone server: on a cluster the executions list and the reply memo are in different slots")
	}
	ctx := e.Ctx()
	ns := keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}
	q, err := queue.New[execution](e.Client, "n8n", queue.WithNamespace(ns), queue.WithSeedConsumers())
	require.NoError(t, err)
	id, err := q.Handoff(ctx, execution{WorkflowID: "wf-1", TriggerType: "webhook"})
	require.NoError(t, err)
	got, err := e.Client.RPop(ctx, e.NS.Prefix+"queue:n8n:executions").Result()
	require.NoError(t, err)
	assert.Contains(t, got, `{"id":"`+id+`","workflow_id":"wf-1"`)
	require.NoError(t, e.Client.LPush(ctx, e.NS.Prefix+"queue:n8n:executions", seedItem("s1", 0), "garbage").Err())
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, "wf-s1", j.Payload.WorkflowID)
	require.NoError(t, q.Ack(ctx, j))
	assert.Equal(t, "1", e.Client.HGet(ctx, e.NS.Prefix+"queue:stats:n8n", "total_processed").Val())
	assert.Equal(t, int64(1), e.Client.LLen(ctx, e.NS.Prefix+"queue:dlq:n8n").Val())
	assert.Zero(t, e.Client.Exists(ctx, e.NS.Prefix+"queue:n8n:executions").Val(), "no token on the seed's list")
}

// Switching a queue to WithSeedConsumers needs no drain: an item that a
// consumer without the option moved to the inbox (its wait ended, and it
// stopped before its next dequeue) is adopted by a consumer with it, and
// one moved there while a consumer with it waits is not lost either.
func TestSeedConsumersAdoptWhatTheInboxHeld(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	inbox := e.NS.Prefix + "queue:{n8n}:inbox"
	require.NoError(t, e.Client.LPush(ctx, inbox, seedItem("left", 0)).Err())
	q := newQ(t, e, "n8n", queue.WithSeedConsumers())
	j, err := q.TryDequeue(ctx)
	require.NoError(t, err)
	assert.Equal(t, "left", j.ID)
	require.NoError(t, q.Ack(ctx, j))

	got := make(chan string, 1)
	go func() {
		j, err := q.Dequeue(ctx)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- j.ID
	}()
	time.Sleep(100 * time.Millisecond) // the consumer waits on the inbox
	require.NoError(t, e.Client.LPush(ctx, inbox, seedItem("moved", 0)).Err())
	select {
	case id := <-got:
		assert.Equal(t, "moved", id)
	case <-time.After(5 * time.Second):
		t.Fatal("the item moved to the inbox was not delivered")
	}
	assert.Zero(t, e.Client.LLen(ctx, e.NS.Prefix+"queue:{n8n}:executions").Val())
}
