// Command queue-worker runs seed 001's n8n execution queue: a producer
// enqueues executions at three priorities, a pool of workers runs them,
// one workflow keeps failing and is retried with backoff into the
// dead-letter list, and every completion is announced on the
// pubsub:workflow:completed channel. Then, with the queue paused, two
// schedulers enqueue a periodic job's ticks once each, and Resume lets
// them run. Then a flow's parent (a report) runs once its three parts
// are done, and two tenants share a queue with per-tenant limits: the
// noisy one, at its cap, does not hold back the quiet one. It prints what
// happened and exits 0.
//
//	go run ./examples/queue-worker                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/2 go run ./examples/queue-worker
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/pubsub"
	"github.com/redschema/redschema/queue"
)

// Execution is the payload of a job, seed 001's item fields.
type Execution struct {
	WorkflowID  string         `json:"workflow_id"`
	TriggerType string         `json:"trigger_type"`
	TriggerData map[string]any `json:"trigger_data"`
}

// completed is pubsub:workflow:completed.
var completed = pubsub.TopicWorkflowCompleted()

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	rdb, closeRedis, err := connect.FromEnv(context.Background(), os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A namespace of its own, so a run against a shared server touches
	// nothing else.
	ns := keys.Namespace{Prefix: fmt.Sprintf("demo-%d:", time.Now().UnixNano())}
	q, err := queue.New[Execution](rdb, "n8n",
		queue.WithNamespace(ns),
		queue.WithMaxRetries(2),
		queue.WithBackoff(queue.ExponentialBackoff(50*time.Millisecond, time.Second)),
		queue.WithErrorHandler(func(err error) { log.Println("worker:", err) }),
	)
	if err != nil {
		return err
	}
	bus, err := pubsub.New(rdb, pubsub.WithNamespace(ns), pubsub.WithSource("queue-worker"))
	if err != nil {
		return err
	}
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	events, err := pubsub.Subscribe(subCtx, bus, completed)
	if err != nil {
		return err
	}
	var announced atomic.Int64
	subscribed := make(chan struct{}) // closed once the subscription is closed
	// Stop the subscriber and wait for it before the client closes.
	defer func() { stopSub(); <-subscribed }()
	go func() {
		defer close(subscribed)
		for ev := range events {
			if ev.Err == nil {
				announced.Add(1)
			}
		}
	}()

	// Producer: 12 executions at three priorities, and one that always fails.
	var items []queue.Item[Execution]
	prios := []queue.Priority{queue.Low, queue.Normal, queue.High}
	for i := 0; i < 12; i++ {
		items = append(items, queue.Item[Execution]{
			Payload: Execution{WorkflowID: fmt.Sprintf("wf-%02d", i), TriggerType: "webhook", TriggerData: map[string]any{"n": i}},
			Options: []queue.EnqueueOption{queue.WithID(fmt.Sprintf("exec-%02d", i)), queue.WithPriority(prios[i%3])},
		})
	}
	items = append(items, queue.Item[Execution]{
		Payload: Execution{WorkflowID: "wf-broken", TriggerType: "schedule"},
		Options: []queue.EnqueueOption{queue.WithID("exec-broken"), queue.WithPriority(queue.High)},
	})
	if _, err := q.EnqueueBatch(ctx, items); err != nil {
		return err
	}
	fmt.Printf("enqueued %d executions (one pipeline)\n", len(items))

	// Workers: a pool of 4 handlers until every job is done or dead.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	var workers sync.WaitGroup
	// On every way out: stop the workers and wait for them, before the
	// client closes.
	defer func() { stop(); workers.Wait() }()
	workers.Add(1)
	go func() {
		defer workers.Done()
		done <- q.Run(runCtx, func(ctx context.Context, j *queue.Job[Execution]) error {
			if j.Payload.WorkflowID == "wf-broken" {
				fmt.Printf("  %s attempt %d failed\n", j.ID, j.RetryCount+1)
				return errors.New("node 'HTTP Request' returned 500")
			}
			time.Sleep(5 * time.Millisecond) // the work
			_, err := pubsub.Publish(ctx, bus, completed, pubsub.WorkflowCompleted{ExecutionID: j.ID, Status: "success"})
			return err
		}, 4)
	}()
	for {
		s, err := q.Stats(ctx)
		if err != nil {
			return err
		}
		if s.TotalProcessed+s.TotalDead == int64(len(items)) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		return err
	}

	s, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("processed %d, failed attempts %d, dead %d, pending %d, in flight %d\n",
		s.TotalProcessed, s.TotalFailed, s.TotalDead, s.Pending(), s.InFlight)
	dead, err := q.List(ctx, queue.Dead, 0, 10)
	if err != nil {
		return err
	}
	for _, d := range dead {
		fmt.Printf("dead letter: %s (%s) after %d attempts: %s\n", d.ID, d.Payload.WorkflowID, d.RetryCount, d.LastError)
	}
	time.Sleep(50 * time.Millisecond) // let the last announcements arrive
	fmt.Printf("completions announced on %s: %d\n", completed.Channel(ns), announced.Load())

	if err := periodic(ctx, q); err != nil {
		return err
	}
	if err := flow(ctx, q); err != nil {
		return err
	}
	if err := tenants(ctx, rdb, ns); err != nil {
		return err
	}

	// Clean up this run's keys (a real deployment keeps them).
	return cleanup(ctx, rdb, ns)
}

// periodic runs a periodic job on two schedulers (two processes in a real
// deployment) while the queue is paused: every tick is enqueued once and
// none is delivered until Resume.
func periodic(ctx context.Context, q *queue.Queue[Execution]) error {
	if _, err := q.Pause(ctx); err != nil {
		return err
	}
	if _, err := q.Schedule(ctx, "heartbeat", "@every 100ms", Execution{WorkflowID: "wf-heartbeat", TriggerType: "schedule"}, time.UTC, queue.Skip); err != nil {
		return err
	}
	schedCtx, stopSched := context.WithTimeout(ctx, 550*time.Millisecond)
	defer stopSched()
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- q.RunSchedules(schedCtx) }()
	}
	for range 2 {
		if err := <-done; err != nil {
			return err
		}
	}
	if _, err := q.Unschedule(ctx, "heartbeat"); err != nil {
		return err
	}
	before, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("paused: %v; 2 schedulers enqueued %d heartbeat ticks (job IDs heartbeat@<tick>, once each), delivered while paused: %d\n",
		before.Paused, before.Pending(), before.InFlight+before.TotalProcessed-12)

	if _, err := q.Resume(ctx); err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	var n atomic.Int64
	go func() {
		ran <- q.Run(runCtx, func(context.Context, *queue.Job[Execution]) error { n.Add(1); return nil }, 2)
	}()
	for n.Load() < before.Pending() {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-ran; err != nil {
		return err
	}
	fmt.Printf("resumed: ran %d heartbeats\n", n.Load())
	return nil
}

// flow enqueues a report and its three parts as one flow: the parts run
// first, and the report once, when the last part is acked.
func flow(ctx context.Context, q *queue.Queue[Execution]) error {
	parts := []queue.Item[Execution]{
		{Payload: Execution{WorkflowID: "wf-extract", TriggerType: "manual"}},
		{Payload: Execution{WorkflowID: "wf-transform", TriggerType: "manual"}},
		{Payload: Execution{WorkflowID: "wf-load", TriggerType: "manual"}},
	}
	report, _, err := q.EnqueueFlow(ctx, queue.Item[Execution]{Payload: Execution{WorkflowID: "wf-report", TriggerType: "manual"}},
		parts, queue.FailParent)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var order []string
	ran := make(chan error, 1)
	go func() {
		ran <- q.Run(runCtx, func(_ context.Context, j *queue.Job[Execution]) error {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, j.Payload.WorkflowID)
			if j.ID == report {
				stop()
			}
			return nil
		}, 3)
	}()
	if err := <-ran; err != nil {
		return err
	}
	fmt.Printf("flow: ran %v (the report once, after its 3 parts)\n", order)
	return nil
}

// tenants runs two tenants' jobs on one queue, each tenant at most 2 at
// once and the queue at most 3, across every worker: the noisy tenant's
// backlog, queued first, does not hold the quiet tenant's jobs back.
func tenants(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace) error {
	q, err := queue.New[Execution](rdb, "tenant-jobs", queue.WithNamespace(ns),
		queue.WithGlobalConcurrency(3),
		queue.WithGroupLimits(queue.GroupLimit{Concurrency: 2}),
		queue.WithGroupLimit("tenant-quiet", queue.GroupLimit{Concurrency: 2, Rate: queue.Rate{N: 10, Per: time.Second}}))
	if err != nil {
		return err
	}
	var items []queue.Item[Execution]
	for i := 0; i < 20; i++ {
		items = append(items, queue.Item[Execution]{Payload: Execution{WorkflowID: "wf-sync", TriggerType: "webhook"},
			Options: []queue.EnqueueOption{queue.WithGroup("tenant-noisy")}})
	}
	for i := 0; i < 3; i++ {
		items = append(items, queue.Item[Execution]{Payload: Execution{WorkflowID: "wf-invoice", TriggerType: "webhook"},
			Options: []queue.EnqueueOption{queue.WithGroup("tenant-quiet")}})
	}
	if _, err := q.EnqueueBatch(ctx, items); err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	running, peak := map[string]int{}, map[string]int{}
	total, noisyAtQuietEnd, quietDone := 0, 0, 0
	ran := make(chan error, 1)
	go func() {
		ran <- q.Run(runCtx, func(_ context.Context, j *queue.Job[Execution]) error {
			mu.Lock()
			running[j.Group]++
			peak[j.Group] = max(peak[j.Group], running[j.Group])
			peak["all"] = max(peak["all"], running["tenant-noisy"]+running["tenant-quiet"])
			mu.Unlock()
			time.Sleep(5 * time.Millisecond) // the work
			mu.Lock()
			defer mu.Unlock()
			running[j.Group]--
			if total++; j.Group == "tenant-quiet" {
				if quietDone++; quietDone == 3 {
					noisyAtQuietEnd = total - 3
				}
			}
			if total == len(items) {
				stop()
			}
			return nil
		}, 8)
	}()
	if err := <-ran; err != nil {
		return err
	}
	fmt.Printf("tenants: 8 workers ran at most %d jobs at once (cap 3), %d of the noisy tenant and %d of the quiet one (cap 2 each); "+
		"the quiet tenant's 3 jobs were done after %d of the noisy tenant's 20\n",
		peak["all"], peak["tenant-noisy"], peak["tenant-quiet"], noisyAtQuietEnd)
	return nil
}
