package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// queueFlows: seed 001 §5, the AI platform's job queues, through the
// queue package's bridge (WithSeedConsumers and Handoff, with hash tags
// off): a Node producer's items run by Go workers, Go's items popped by a
// Node consumer, both sides consuming one list, and the stats hash, the
// dead letters and the priority sets read by Node.
func queueFlows() []flow {
	all := []string{"ioredis6", "redis4", "redis6"}
	return []flow{
		{seed: "001", name: "queue executions node->go", area: "queue", clients: all, run: queueNodeGo},
		{seed: "001", name: "queue executions go->node", area: "queue", clients: all, run: queueGoNode},
		{seed: "001", name: "queue one list, Node and Go consumers go->node", area: "queue", clients: all, run: queueShared},
		{seed: "001", name: "queue malformed items node->go", area: "queue", clients: all, run: queueMalformed},
		{seed: "001", name: "queue stats and dead letters go->node", area: "queue", clients: all, run: queueStatsDead},
		{seed: "001", name: "queue priority scores go->node", area: "queue", clients: all, run: queuePriorityScores,
			documented: "a priority set's score is the ready time in ms × 1000 plus a FIFO sequence, not a Unix timestamp: the seed's timestamp score leaves jobs of one millisecond unordered, and the level (the key) is what orders by priority; floor(score / 1000) is the Unix ms (docs/queue.md, Sharing the list with Node)"},
		{seed: "001", name: "queue wake-up token without WithSeedConsumers go->node", area: "queue", clients: all, run: queueTokenDefault,
			documented: "without WithSeedConsumers the executions list also holds the package's wake-up token, which a Node consumer pops; a queue whose list Node still pops needs the option (docs/queue.md, Sharing the list with Node)"},
	}
}

// seedNS is the AI platform's namespace: no prefix, no hash tags.
var seedNS = keys.Namespace{NoHashTags: true}

// execution is the payload of seed 001's item: its fields besides the
// envelope (id, priority, created_at, retry_count).
type execution struct {
	WorkflowID  string         `json:"workflow_id"`
	TriggerType string         `json:"trigger_type"`
	TriggerData map[string]any `json:"trigger_data"`
}

// seedItem is seed 001 §5's item, its fields in the seed's order.
type seedItem struct {
	ID          string         `json:"id"`
	WorkflowID  string         `json:"workflow_id"`
	TriggerType string         `json:"trigger_type"`
	TriggerData map[string]any `json:"trigger_data"`
	Priority    int            `json:"priority"`
	CreatedAt   string         `json:"created_at"`
	RetryCount  int            `json:"retry_count"`
}

// popped is what the seed's consumer got from one RPOP.
type popped struct {
	Raw   string    `json:"raw"`
	Job   *seedItem `json:"job"`
	Error string    `json:"error"`
	Keys  []string  `json:"keys"`
}

// itemKeys are the item's fields in the seed's order.
var itemKeys = []string{"id", "workflow_id", "trigger_type", "trigger_data", "priority", "created_at", "retry_count"}

func seedQueue(e *env, opts ...queue.Option) (*queue.Queue[execution], error) {
	return queue.New[execution](e.rdb, "n8n", append([]queue.Option{queue.WithNamespace(seedNS), queue.WithSeedConsumers()}, opts...)...)
}

// items returns n seed items with IDs prefix00.., created now.
func items(prefix string, n int) []seedItem {
	out := make([]seedItem, n)
	at := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	for i := range out {
		id := fmt.Sprintf("%s%02d", prefix, i)
		out[i] = seedItem{ID: id, WorkflowID: "wf-" + id, TriggerType: "webhook", TriggerData: map[string]any{"path": "/hook/" + id}, CreatedAt: at}
	}
	return out
}

// samePayload reports whether j carries it's fields.
func samePayload(j *queue.Job[execution], it seedItem) bool {
	return j.ID == it.ID && j.Payload.WorkflowID == it.WorkflowID && j.Payload.TriggerType == it.TriggerType &&
		fmt.Sprint(j.Payload.TriggerData) == fmt.Sprint(it.TriggerData)
}

// workers runs n Go workers of q until ctx ends, calling got for each job
// (before its ack).
func workers(ctx context.Context, q *queue.Queue[execution], n int, got func(*queue.Job[execution])) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, err := q.Dequeue(ctx)
				if err != nil {
					return
				}
				got(j)
				_ = q.Ack(context.WithoutCancel(ctx), j)
			}
		}()
	}
	return &wg
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) && ctx.Err() == nil {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// queueNodeGo: the seed's producer LPUSHes items; one Go worker takes
// them in the order pushed with the item's fields decoded, then four Go
// workers take 40 more, each once.
func queueNodeGo(ctx context.Context, e *env) error {
	q, err := seedQueue(e)
	if err != nil {
		return err
	}
	first := items("a", 5)
	if err := e.node(ctx, "produce", map[string]any{"queue": "n8n", "items": first}, nil); err != nil {
		return err
	}
	for i, it := range first {
		j, err := q.TryDequeue(ctx)
		if err != nil {
			return diverge("item %d (%s) pushed by Node: %v", i, it.ID, err)
		}
		if !samePayload(j, it) {
			return diverge("item %d: got job %s %+v, Node pushed %+v", i, j.ID, j.Payload, it)
		}
		if want, _ := time.Parse(time.RFC3339, it.CreatedAt); !j.CreatedAt.Equal(want.Truncate(time.Second)) && !j.CreatedAt.Equal(want) {
			return diverge("item %s: created_at %v, Node wrote %s", it.ID, j.CreatedAt, it.CreatedAt)
		}
		if err := q.Ack(ctx, j); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	seen := map[string]int{}
	var bad []string
	more := items("b", 40)
	byID := map[string]seedItem{}
	for _, it := range more {
		byID[it.ID] = it
	}
	wg := workers(wctx, q, 4, func(j *queue.Job[execution]) {
		mu.Lock()
		defer mu.Unlock()
		seen[j.ID]++
		if !samePayload(j, byID[j.ID]) {
			bad = append(bad, j.ID)
		}
	})
	if err := e.node(ctx, "produce", map[string]any{"queue": "n8n", "items": more}, nil); err != nil {
		return err
	}
	ok := waitFor(ctx, 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == len(more) })
	cancel()
	wg.Wait()
	if !ok {
		return diverge("Go workers ran %d of the %d items Node pushed", len(seen), len(more))
	}
	for id, n := range seen {
		if n != 1 {
			return diverge("item %s ran %d times", id, n)
		}
	}
	if len(bad) > 0 {
		return diverge("payloads not as Node pushed them: %v", bad)
	}
	s, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	if s.TotalEnqueued != 45 || s.TotalProcessed != 45 {
		return diverge("stats: %d enqueued, %d processed, want 45 and 45", s.TotalEnqueued, s.TotalProcessed)
	}
	return nil
}

// queueGoNode: Go hands jobs off; the seed's consumer RPOPs them in the
// order handed off, each the seed's item byte for byte.
func queueGoNode(ctx context.Context, e *env) error {
	q, err := seedQueue(e)
	if err != nil {
		return err
	}
	type sent struct {
		id   string
		p    execution
		prio queue.Priority
	}
	var out []sent
	for i, prio := range []queue.Priority{queue.Normal, queue.High, queue.Low, queue.Normal} {
		p := execution{WorkflowID: fmt.Sprintf("wf-%d", i), TriggerType: "schedule", TriggerData: map[string]any{"n": float64(i)}}
		opts := []queue.EnqueueOption{queue.WithPriority(prio)}
		if i == 3 {
			opts = append(opts, queue.WithID("exec-3"))
		}
		id, err := q.Handoff(ctx, p, opts...)
		if err != nil {
			return err
		}
		out = append(out, sent{id, p, prio})
	}
	var got []popped
	if err := e.node(ctx, "consume", map[string]any{"queue": "n8n"}, &got); err != nil {
		return err
	}
	if len(got) != len(out) {
		return diverge("Node popped %d items, Go handed off %d", len(got), len(out))
	}
	for i, g := range got {
		s := out[i]
		if g.Error != "" || g.Job == nil {
			return diverge("item %d: Node could not read %q: %s", i, g.Raw, g.Error)
		}
		if !slices.Equal(g.Keys, itemKeys) {
			return diverge("item %d's fields %v, the seed's are %v", i, g.Keys, itemKeys)
		}
		want := fmt.Sprintf(`{"id":%q,"workflow_id":%q,"trigger_type":"schedule","trigger_data":{"n":%d},"priority":%d,"created_at":%q,"retry_count":0}`,
			s.id, s.p.WorkflowID, i, int(s.prio), g.Job.CreatedAt)
		if g.Raw != want {
			return diverge("item %d: Node popped %s, want %s", i, g.Raw, want)
		}
		at, err := time.Parse(time.RFC3339, g.Job.CreatedAt)
		if err != nil || time.Since(at).Abs() > time.Minute {
			return diverge("item %d: created_at %q is not now (%v)", i, g.Job.CreatedAt, err)
		}
	}
	return nil
}

// queueShared: Go workers (WithSeedConsumers), Go Handoff and Enqueue,
// and Node producing and consuming, all on one list at once: the Node
// consumer pops only items (never the wake-up token), and every job runs
// once, on one side or the other.
func queueShared(ctx context.Context, e *env) error {
	q, err := seedQueue(e, queue.WithGlobalConcurrency(2))
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	ran := map[string]int{}
	wg := workers(wctx, q, 3, func(j *queue.Job[execution]) {
		mu.Lock()
		ran[j.ID]++
		mu.Unlock()
	})
	const n = 30
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := q.Handoff(ctx, execution{WorkflowID: "h", TriggerType: "manual"}, queue.WithID(fmt.Sprintf("h%02d", i))); err != nil {
				errc <- err
				return
			}
			if _, err := q.Enqueue(ctx, execution{WorkflowID: "e"}, queue.WithID(fmt.Sprintf("e%02d", i))); err != nil {
				errc <- err
				return
			}
			if i == n/2 {
				if _, err := q.Pause(ctx); err != nil {
					errc <- err
					return
				}
				if _, err := q.Resume(ctx); err != nil {
					errc <- err
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		errc <- nil
	}()
	var got []popped
	if err := e.node(ctx, "consumeFor", map[string]any{"queue": "n8n", "ms": 1500, "items": items("n", n)}, &got); err != nil {
		return err
	}
	if err := <-errc; err != nil {
		return err
	}
	var tokens []string
	node := map[string]bool{}
	for _, g := range got {
		if g.Error != "" {
			tokens = append(tokens, g.Raw)
			continue
		}
		node[g.Job.ID] = true
	}
	ok := waitFor(ctx, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran)+len(node) >= 3*n
	})
	cancel()
	wg.Wait()
	if len(tokens) > 0 {
		return diverge("the Node consumer popped %d elements that are not items: %q", len(tokens), tokens)
	}
	var missing, twice []string
	for _, p := range []string{"h", "n", "e"} {
		for i := range n {
			id := fmt.Sprintf("%s%02d", p, i)
			c := ran[id]
			if node[id] {
				c++
			}
			switch {
			case c == 0:
				missing = append(missing, id)
			case c > 1:
				twice = append(twice, id)
			}
			if p == "e" && node[id] {
				return diverge("Node popped %s, a job enqueued in Go (not an item)", id)
			}
		}
	}
	if !ok || len(missing) > 0 || len(twice) > 0 {
		return diverge("jobs never run: %v; run twice: %v", missing, twice)
	}
	if n, err := e.rdb.LLen(ctx, "queue:n8n:executions").Result(); err != nil || n != 0 {
		return diverge("the executions list holds %d elements after the run (%v)", n, err)
	}
	return nil
}

// queueMalformed: what Node pushes that is not a runnable item is
// dead-lettered with the reason, never dropped; the seed's reader sees
// each dead letter as JSON with its error, and the list's 7-day TTL.
func queueMalformed(ctx context.Context, e *env) error {
	q, err := seedQueue(e)
	if err != nil {
		return err
	}
	raw := []string{"not json", "[1,2]", `"text"`,
		`{"id":"typed","workflow_id":5,"trigger_type":"webhook","trigger_data":{},"priority":0,"created_at":"2026-01-16T10:00:00.000Z","retry_count":0}`}
	if err := e.node(ctx, "pushRaw", map[string]any{"queue": "n8n", "raw": raw}, nil); err != nil {
		return err
	}
	good := items("ok", 1)
	if err := e.node(ctx, "produce", map[string]any{"queue": "n8n", "items": good}, nil); err != nil {
		return err
	}
	var ran []string
	var corrupt int
	for range 10 {
		j, err := q.TryDequeue(ctx)
		if errors.Is(err, queue.ErrEmpty) {
			break
		}
		if errors.Is(err, keys.ErrCorrupt) {
			corrupt++
			continue
		}
		if err != nil {
			return err
		}
		ran = append(ran, j.ID)
		if err := q.Ack(ctx, j); err != nil {
			return err
		}
	}
	if !slices.Equal(ran, []string{"ok00"}) || corrupt == 0 {
		return diverge("ran %v (want ok00), %d corrupt reports", ran, corrupt)
	}
	var dl struct {
		TTL     int64            `json:"ttl"`
		Entries []map[string]any `json:"entries"`
	}
	if err := e.node(ctx, "deadLetters", map[string]any{"queue": "n8n"}, &dl); err != nil {
		return err
	}
	if len(dl.Entries) != len(raw) {
		return diverge("Node reads %d dead letters, want %d: %v", len(dl.Entries), len(raw), dl.Entries)
	}
	var why []string
	for _, d := range dl.Entries {
		s, _ := d["error"].(string)
		if s == "" {
			return diverge("a dead letter without its reason: %v", d)
		}
		why = append(why, s)
	}
	sort.Strings(why)
	joined := strings.Join(why, "; ")
	if strings.Count(joined, "not a job") != 3 || !strings.Contains(joined, "corrupt") {
		return diverge("dead-letter reasons %q", joined)
	}
	if dl.TTL <= 0 || dl.TTL > 604800 {
		return diverge("the dead-letter list's TTL is %d s, the seed's is 604800", dl.TTL)
	}
	return nil
}

// queueStatsDead: Go workers process and fail jobs; the seed's reader
// sees the stats hash's fields as counts, a number and a timestamp, and
// the failed job in the dead letters.
func queueStatsDead(ctx context.Context, e *env) error {
	q, err := seedQueue(e, queue.WithMaxRetries(0))
	if err != nil {
		return err
	}
	for i, id := range []string{"s0", "s1", "s2"} {
		if _, err := q.Enqueue(ctx, execution{WorkflowID: fmt.Sprint("wf-", i)}, queue.WithID(id)); err != nil {
			return err
		}
	}
	for range 3 {
		j, err := q.TryDequeue(ctx)
		if err != nil {
			return err
		}
		if j.ID == "s1" {
			if _, err := q.Nack(ctx, j, errors.New("boom")); err != nil {
				return err
			}
			continue
		}
		if err := q.Ack(ctx, j); err != nil {
			return err
		}
	}
	s, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	var st struct {
		Processed float64 `json:"total_processed"`
		Failed    float64 `json:"total_failed"`
		Avg       float64 `json:"avg_process_time_ms"`
		Last      string  `json:"last_processed_at"`
		LastISO   *string `json:"last_processed_iso"`
	}
	if err := e.node(ctx, "stats", map[string]any{"queue": "n8n"}, &st); err != nil {
		return err
	}
	if int64(st.Processed) != s.TotalProcessed || int64(st.Failed) != s.TotalFailed || st.Processed != 2 || st.Failed != 1 {
		return diverge("Node reads processed %v, failed %v; Go's Stats %d, %d", st.Processed, st.Failed, s.TotalProcessed, s.TotalFailed)
	}
	if math.IsNaN(st.Avg) || st.Avg < 0 {
		return diverge("avg_process_time_ms reads as %v", st.Avg)
	}
	if st.LastISO == nil {
		return diverge("last_processed_at %q is not a timestamp", st.Last)
	}
	if at, err := time.Parse(time.RFC3339, *st.LastISO); err != nil || time.Since(at).Abs() > time.Minute {
		return diverge("last_processed_at %q reads as %s, not now", st.Last, *st.LastISO)
	}
	var dl struct {
		TTL     int64            `json:"ttl"`
		Entries []map[string]any `json:"entries"`
	}
	if err := e.node(ctx, "deadLetters", map[string]any{"queue": "n8n"}, &dl); err != nil {
		return err
	}
	if len(dl.Entries) != 1 || dl.Entries[0]["id"] != "s1" || dl.Entries[0]["error"] != "boom" {
		return diverge("Node reads the dead letters %v, want s1 with its error", dl.Entries)
	}
	if dl.TTL <= 0 || dl.TTL > 604800 {
		return diverge("the dead-letter list's TTL is %d s, the seed's is 604800", dl.TTL)
	}
	return nil
}

// queuePriorityScores: the seed scores its priority sets by Unix
// timestamp; the library by ready ms × 1000 plus a FIFO sequence (a
// documented divergence). The library's own reading must hold:
// floor(score / 1000) is the Unix ms of the job's ready time.
func queuePriorityScores(ctx context.Context, e *env) error {
	q, err := seedQueue(e)
	if err != nil {
		return err
	}
	if _, err := q.Enqueue(ctx, execution{WorkflowID: "wf"}, queue.WithID("p1"), queue.WithPriority(queue.High)); err != nil {
		return err
	}
	var got []struct {
		Member string  `json:"member"`
		Score  float64 `json:"score"`
		Year   *int    `json:"year"`
	}
	if err := e.node(ctx, "prioritySet", map[string]any{"queue": "n8n", "level": "high"}, &got); err != nil {
		return err
	}
	if len(got) != 1 || got[0].Member != "p1" {
		return fmt.Errorf("the seed's reader sees the high set as %+v, want p1", got)
	}
	ready := time.UnixMilli(int64(got[0].Score / 1000))
	if time.Since(ready).Abs() > time.Minute {
		return fmt.Errorf("score %v: floor(score / 1000) = %v is not the ready time", got[0].Score, ready)
	}
	if got[0].Year == nil || *got[0].Year != time.Now().UTC().Year() {
		return diverge("the seed's reader takes score %v as a Unix timestamp: not a date of this year", got[0].Score)
	}
	return nil
}

// queueTokenDefault: without WithSeedConsumers the executions list holds
// the wake-up token, which a Node consumer pops (a documented
// divergence); with the option the list stays empty.
func queueTokenDefault(ctx context.Context, e *env) error {
	with, err := seedQueue(e)
	if err != nil {
		return err
	}
	if _, err := with.Enqueue(ctx, execution{WorkflowID: "wf"}); err != nil {
		return err
	}
	if n, err := e.rdb.LLen(ctx, "queue:n8n:executions").Result(); err != nil || n != 0 {
		return fmt.Errorf("with WithSeedConsumers an Enqueue left %d elements on the executions list (%v)", n, err)
	}
	without, err := queue.New[execution](e.rdb, "n8n", queue.WithNamespace(seedNS))
	if err != nil {
		return err
	}
	// An enqueue checks the wake list at the first enqueue of a
	// millisecond: let the first one's pass.
	time.Sleep(2 * time.Millisecond)
	if _, err := without.Enqueue(ctx, execution{WorkflowID: "wf"}); err != nil {
		return err
	}
	var got []popped
	if err := e.node(ctx, "consume", map[string]any{"queue": "n8n"}, &got); err != nil {
		return err
	}
	for _, g := range got {
		if g.Error != "" {
			return diverge("the Node consumer popped %q: %s", g.Raw, g.Error)
		}
	}
	return nil
}
