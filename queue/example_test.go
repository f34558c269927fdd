package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/queue"
)

// Execution is the payload of seed 001's n8n execution queue.
type Execution struct {
	WorkflowID  string         `json:"workflow_id"`
	TriggerType string         `json:"trigger_type"` // webhook | schedule | manual
	TriggerData map[string]any `json:"trigger_data"`
}

func Example() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	q, err := queue.New[Execution](rdb, "n8n")
	if err != nil {
		panic(err)
	}
	_, _ = q.Enqueue(ctx, Execution{WorkflowID: "nightly", TriggerType: "schedule"}, queue.WithID("e1"), queue.WithPriority(queue.Low))
	_, _ = q.Enqueue(ctx, Execution{WorkflowID: "signup", TriggerType: "webhook"}, queue.WithID("e2"), queue.WithPriority(queue.High))

	for {
		j, err := q.TryDequeue(ctx)
		if errors.Is(err, queue.ErrEmpty) {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println("run", j.ID, j.Payload.WorkflowID, j.Priority)
		if err := q.Ack(ctx, j); err != nil {
			panic(err)
		}
	}
	s, _ := q.Stats(ctx)
	fmt.Println("processed:", s.TotalProcessed)
	// Output:
	// run e2 signup high
	// run e1 nightly low
	// processed: 2
}

func ExampleQueue_Nack() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()
	q, _ := queue.New[Execution](rdb, "n8n")

	_, _ = q.Enqueue(ctx, Execution{WorkflowID: "broken"}, queue.WithID("e3"), queue.WithJobMaxRetries(0))
	j, _ := q.TryDequeue(ctx)
	dead, _ := q.Nack(ctx, j, errors.New("workflow not found"))
	fmt.Println("dead lettered:", dead)

	d, _ := q.List(ctx, queue.Dead, 0, 10)
	fmt.Println(d[0].ID, d[0].LastError)
	_ = q.Requeue(ctx, "e3")
	j, _ = q.TryDequeue(ctx)
	fmt.Println("back:", j.ID, j.RetryCount)
	// Output:
	// dead lettered: true
	// e3 workflow not found
	// back: e3 0
}

func ExampleQueue_Enqueue_unique() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()
	q, _ := queue.New[Execution](rdb, "n8n")

	once := []queue.EnqueueOption{queue.WithID("webhook-7f3a"), queue.WithUnique(10 * time.Minute)}
	_, err := q.Enqueue(ctx, Execution{WorkflowID: "signup"}, once...)
	fmt.Println(err)
	_, err = q.Enqueue(ctx, Execution{WorkflowID: "signup"}, once...)
	fmt.Println(errors.Is(err, queue.ErrDuplicate))
	// Output:
	// <nil>
	// true
}

func ExampleQueue_Pause() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	q, err := queue.New[Execution](rdb, "n8n")
	if err != nil {
		panic(err)
	}
	if _, err := q.Pause(ctx); err != nil {
		panic(err)
	}
	_, _ = q.Enqueue(ctx, Execution{WorkflowID: "nightly"}, queue.WithID("e1")) // lands, is not delivered
	_, err = q.TryDequeue(ctx)
	s, _ := q.Stats(ctx)
	fmt.Println("paused:", s.Paused, "pending:", s.Pending(), "empty:", errors.Is(err, queue.ErrEmpty))

	if _, err := q.Resume(ctx); err != nil {
		panic(err)
	}
	j, err := q.TryDequeue(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("run", j.ID)
	// Output:
	// paused: true pending: 1 empty: true
	// run e1
}

func ExampleQueue_Schedule() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	srv.SetTime(time.Date(2026, 3, 2, 8, 59, 30, 0, time.UTC)) // a Monday
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	q, err := queue.New[Execution](rdb, "n8n")
	if err != nil {
		panic(err)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	// Every instance may declare it: the same definition changes nothing.
	if _, err := q.Schedule(ctx, "report", "0 10 * * 1-5", Execution{WorkflowID: "report", TriggerType: "schedule"},
		paris, queue.Skip); err != nil {
		panic(err)
	}
	// Any number of processes run the scheduler; each tick is enqueued once.
	scheduler := func() {
		c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_ = q.RunSchedules(c)
	}
	scheduler()
	list, _ := q.Schedules(ctx)
	fmt.Println(list[0].Name, list[0].Spec, list[0].TimeZone, "next:", list[0].Next.In(paris).Format("Mon 15:04"))

	srv.SetTime(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)) // 10:00 in Paris
	scheduler()
	j, err := q.TryDequeue(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("run", j.ID, j.Payload.WorkflowID)
	list, _ = q.Schedules(ctx)
	fmt.Println("next:", list[0].Next.In(paris).Format("Mon 15:04"))
	// Output:
	// report 0 10 * * 1-5 Europe/Paris next: Mon 10:00
	// run report@1772442000000 report
	// next: Tue 10:00
}

func ExampleWithRetention() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	q, _ := queue.New[Execution](rdb, "n8n", queue.WithRetention(24*time.Hour))
	_, _ = q.Enqueue(ctx, Execution{WorkflowID: "report"}, queue.WithID("e1"))

	j, _ := q.TryDequeue(ctx)
	_ = j.SetProgress(ctx, map[string]int{"rows": 500})
	in, _ := q.Peek(ctx, "e1")
	fmt.Println(in.State, string(in.Progress))

	_ = j.SetResult(map[string]string{"url": "s3://reports/e1.csv"})
	_ = q.Ack(ctx, j)
	in, _ = q.Peek(ctx, "e1")
	fmt.Println(in.State, string(in.Result))
	// Output:
	// active {"rows":500}
	// completed {"url":"s3://reports/e1.csv"}
}

func ExampleQueue_Cancel() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	q, _ := queue.New[Execution](rdb, "n8n")
	_, _ = q.Enqueue(ctx, Execution{WorkflowID: "export"}, queue.WithID("e1"), queue.WithTimeout(time.Hour))

	started, stopped := make(chan struct{}), make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = q.Run(runCtx, func(ctx context.Context, j *queue.Job[Execution]) error {
			close(started)
			<-ctx.Done() // Cancel ends the handler's context at once
			stopped <- context.Cause(ctx)
			return ctx.Err()
		}, 1)
	}()
	<-started
	state, _ := q.Cancel(ctx, "e1")
	fmt.Println("was", state, "- handler saw:", <-stopped)
	stop()
	<-done
	s, _ := q.Stats(ctx)
	fmt.Println("cancelled:", s.TotalCancelled, "failed:", s.TotalFailed)
	// Output:
	// was active - handler saw: queue: job cancelled
	// cancelled: 1 failed: 0
}

func ExampleWithMiddleware() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	logging := func(next queue.Handler[Execution]) queue.Handler[Execution] {
		return func(ctx context.Context, j *queue.Job[Execution]) error {
			fmt.Println("start", j.ID, "tenant", j.Headers["tenant"])
			err := next(ctx, j)
			fmt.Println("end", j.ID, err)
			return err
		}
	}
	q, _ := queue.New[Execution](rdb, "n8n", queue.WithMiddleware(logging))
	_, _ = q.Enqueue(ctx, Execution{WorkflowID: "w"}, queue.WithID("e1"), queue.WithHeaders(map[string]string{"tenant": "acme"}))

	runCtx, stop := context.WithCancel(ctx)
	_ = q.Run(runCtx, func(ctx context.Context, j *queue.Job[Execution]) error {
		fmt.Println("handle", j.Payload.WorkflowID)
		stop()
		return nil
	}, 1)
	// Output:
	// start e1 tenant acme
	// handle w
	// end e1 <nil>
}

func ExampleQueue_ReadEvents() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	q, _ := queue.New[Execution](rdb, "n8n", queue.WithEvents(10000))
	_, _ = q.Enqueue(ctx, Execution{WorkflowID: "w"}, queue.WithID("e1"))
	j, _ := q.TryDequeue(ctx)
	_ = q.Ack(ctx, j)

	// A reader keeps the ID of the last event it handled and resumes
	// from it (after a restart too): nothing recorded meanwhile is missed.
	last := ""
	for {
		evs, err := q.ReadEvents(ctx, last, 100, 0)
		if err != nil || len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			fmt.Println(ev.Kind, ev.JobID)
			last = ev.ID
		}
	}
	// Output:
	// enqueued e1
	// started e1
	// completed e1
}

func ExampleWithGroupLimits() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	// every tenant: one job at a time; at most 10 jobs of the queue at
	// once, across all consumers
	q, err := queue.New[Execution](rdb, "n8n", queue.WithGlobalConcurrency(10),
		queue.WithGroupLimits(queue.GroupLimit{Concurrency: 1}))
	if err != nil {
		panic(err)
	}
	for _, tenant := range []string{"acme", "acme", "acme", "globex"} {
		_, _ = q.Enqueue(ctx, Execution{WorkflowID: "sync"}, queue.WithGroup(tenant))
	}
	for {
		j, err := q.TryDequeue(ctx) // leases are held: acme stays at its limit
		if errors.Is(err, queue.ErrEmpty) {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println("run", j.Group)
	}
	// Output:
	// run acme
	// run globex
}

func ExampleQueue_EnqueueFlow() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	q, err := queue.New[Execution](rdb, "n8n")
	if err != nil {
		panic(err)
	}
	// the report runs once both parts are done
	_, _, err = q.EnqueueFlow(ctx, queue.Item[Execution]{Payload: Execution{WorkflowID: "report"}},
		[]queue.Item[Execution]{{Payload: Execution{WorkflowID: "part-1"}}, {Payload: Execution{WorkflowID: "part-2"}}},
		queue.FailParent)
	if err != nil {
		panic(err)
	}
	for {
		j, err := q.TryDequeue(ctx)
		if errors.Is(err, queue.ErrEmpty) {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println("run", j.Payload.WorkflowID)
		if err := q.Ack(ctx, j); err != nil {
			panic(err)
		}
	}
	// Output:
	// run part-1
	// run part-2
	// run report
}

// A high-rate producer of jobs with generated IDs drops the reply memo:
// one key fewer per enqueue. An enqueue WithID still keeps its memo.
func ExampleWithoutReplayMemo() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	q, err := queue.New[Execution](rdb, "events", queue.WithoutReplayMemo())
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := q.Enqueue(ctx, Execution{WorkflowID: "ingest", TriggerType: "webhook"}); err != nil {
			panic(err)
		}
	}
	// The jobs hash, the ready set, the stats hash and the wake-up list:
	// no reply memo (with one, 3 more keys for a minute).
	n, _ := rdb.DBSize(ctx).Result()
	s, _ := q.Stats(ctx)
	fmt.Println("enqueued:", s.TotalEnqueued, "keys:", n)
	// Output:
	// enqueued: 3 keys: 4
}

// An admin tool lists the queues of a namespace and reads their views in
// one round trip.
func ExampleNewInspector() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	ctx := context.Background()

	for _, name := range []string{"emails", "n8n"} {
		q, _ := queue.New[Execution](rdb, name)
		_, _ = q.Enqueue(ctx, Execution{WorkflowID: "w-" + name}, queue.WithID("e1"))
	}

	in, err := queue.NewInspector(rdb)
	if err != nil {
		panic(err)
	}
	names, err := in.Names(ctx) // a SCAN
	if err != nil {
		panic(err)
	}
	views, err := in.Views(ctx, names, 10, queue.Pending) // one pipeline
	if err != nil {
		panic(err)
	}
	for i, v := range views {
		for _, j := range v.Jobs[queue.Pending] {
			fmt.Println(names[i], "ready:", v.Stats.Ready[queue.Normal], j.ID, string(j.Payload))
		}
	}
	// Output:
	// emails ready: 1 e1 {"workflow_id":"w-emails","trigger_type":"","trigger_data":null}
	// n8n ready: 1 e1 {"workflow_id":"w-n8n","trigger_type":"","trigger_data":null}
}
