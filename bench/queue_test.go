package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/queue"
)

// queueConcurrency is the number of handler goroutines (and, for the
// enqueue benchmarks, producer goroutines) on both sides.
const queueConcurrency = 16

type benchExecution struct {
	WorkflowID  string            `json:"workflow_id"`
	TriggerType string            `json:"trigger_type"`
	TriggerData map[string]string `json:"trigger_data"`
}

var benchPayload = benchExecution{WorkflowID: "wf-123", TriggerType: "webhook", TriggerData: map[string]string{"path": "/hook/signup"}}

func asynqQueueName() string { return fmt.Sprintf("rsb%d", time.Now().UnixNano()) }

// asynqCleanup removes an asynq queue and its tasks.
func asynqCleanup(b *testing.B, c redis.UniversalClient, qname string) {
	b.Cleanup(func() {
		ins := asynq.NewInspectorFromRedisClient(c)
		_ = ins.DeleteQueue(qname, true)
		_ = benchutil.Clean(context.Background(), c, "asynq:{"+qname+"}")
	})
}

// memoryPerEntity is MEMORY USAGE (exact) of every key under prefix,
// pipelined, divided by n.
func memoryPerEntity(b *testing.B, c redis.UniversalClient, prefix string, n int) {
	ctx := context.Background()
	var total atomic.Int64
	err := keys.ForEachNode(ctx, c, func(ctx context.Context, node redis.UniversalClient) error {
		it := node.Scan(ctx, 0, keys.Namespace{Prefix: prefix}.Match(), 1000).Iterator()
		var batch []string
		flush := func() error {
			pipe := node.Pipeline()
			cmds := make([]*redis.IntCmd, len(batch))
			for i, k := range batch {
				cmds[i] = pipe.MemoryUsage(ctx, k, 0)
			}
			if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
				return err
			}
			for _, c := range cmds {
				total.Add(c.Val())
			}
			batch = batch[:0]
			return nil
		}
		for it.Next(ctx) {
			if batch = append(batch, it.Val()); len(batch) == 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(total.Load())/float64(n), "B/job")
}

// BenchmarkQueueEnqueue: one job per op from queueConcurrency producers;
// redschema with its reply memo (the default) and without it
// (WithoutReplayMemo, which asynq's enqueue does not have either).
func BenchmarkQueueEnqueue(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []queue.Option
	}{{"redschema", nil}, {"redschema-nomemo", []queue.Option{queue.WithoutReplayMemo()}}} {
		b.Run(v.name, func(b *testing.B) {
			e := benchutil.New(b)
			q, err := queue.New[benchExecution](e.Client, "bench", append([]queue.Option{queue.WithNamespace(e.NS)}, v.opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			enqueueRun(b, e, func() error {
				_, err := q.Enqueue(ctx, benchPayload)
				return err
			})
			memoryPerEntity(b, e.Client, e.NS.Prefix, b.N)
		})
	}
	b.Run("asynq", func(b *testing.B) {
		e := benchutil.New(b)
		qname := asynqQueueName()
		asynqCleanup(b, e.Client, qname)
		c := asynq.NewClientFromRedisClient(e.Client)
		data, _ := json.Marshal(benchPayload)
		enqueueRun(b, e, func() error {
			_, err := c.Enqueue(asynq.NewTask("execution", data), asynq.Queue(qname))
			return err
		})
		memoryPerEntity(b, e.Client, "asynq:{"+qname+"}", b.N)
	})
}

// enqueueRun times op from queueConcurrency producers (GOMAXPROCS is 2
// here), reporting allocations and round trips.
func enqueueRun(b *testing.B, e *benchutil.Env, op func() error) {
	e.Warm(b)
	b.ReportAllocs()
	b.SetParallelism(queueConcurrency / 2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	e.ReportTrips(b)
}

// BenchmarkQueueEnqueueBatch: EnqueueBatch of 100 jobs per pipeline from
// queueConcurrency producers; an op is one job. asynq has no batch API.
func BenchmarkQueueEnqueueBatch(b *testing.B) {
	e := benchutil.New(b)
	q, err := queue.New[benchExecution](e.Client, "bench", queue.WithNamespace(e.NS))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var next atomic.Int64
	e.Warm(b)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < queueConcurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := make([]queue.Item[benchExecution], 100)
			for i := range items {
				items[i].Payload = benchPayload
			}
			for {
				end := next.Add(100)
				start := end - 100
				if start >= int64(b.N) {
					return
				}
				n := min(end, int64(b.N)) - start
				if _, err := q.EnqueueBatch(ctx, items[:n]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	e.ReportTrips(b)
}

// BenchmarkQueueProcess: b.N jobs are enqueued first (not timed), then
// queueConcurrency no-op handlers process them all; an op is one processed
// job, jobs/s is the throughput, trips/op the round trips per job (asynq's
// include its server's background work, ours the fetch and settle
// batches).
func BenchmarkQueueProcess(b *testing.B) {
	b.Run("redschema", func(b *testing.B) { processQueue(b, nil, nil) })
	b.Run("asynq", func(b *testing.B) { processAsynq(b, queueConcurrency) })
}

// processQueue enqueues b.N jobs (opts(i) for job i), then times Run with
// queueConcurrency handlers on a queue made with qopts until all are
// processed; it reports jobs/s and trips/op.
func processQueue(b *testing.B, qopts []queue.Option, opts func(i int) []queue.EnqueueOption) {
	e := benchutil.New(b)
	q, err := queue.New[benchExecution](e.Client, "bench", append([]queue.Option{queue.WithNamespace(e.NS)}, qopts...)...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for start := 0; start < b.N; start += 1000 {
		items := make([]queue.Item[benchExecution], min(1000, b.N-start))
		for i := range items {
			items[i].Payload = benchPayload
			if opts != nil {
				items[i].Options = opts(start + i)
			}
		}
		if _, err := q.EnqueueBatch(ctx, items); err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	done := make(chan struct{})
	rctx, cancel := context.WithCancel(ctx)
	e.Warm(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	runDone := make(chan error, 1)
	go func() {
		runDone <- q.Run(rctx, func(ctx context.Context, j *queue.Job[benchExecution]) error {
			if n.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		}, queueConcurrency)
	}()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-runDone; err != nil {
		b.Fatal(err)
	}
	e.ReportTrips(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
	s, err := q.Stats(ctx)
	if err != nil || s.TotalProcessed != int64(b.N) {
		b.Fatalf("processed %d of %d: %v", s.TotalProcessed, b.N, err)
	}
}

// processAsynq is processQueue for asynq: b.N tasks enqueued by
// queueConcurrency producers (not timed), then an asynq server of
// concurrency handlers timed until all are processed; it reports jobs/s
// and trips/op.
func processAsynq(b *testing.B, concurrency int) {
	e := benchutil.New(b)
	qname := asynqQueueName()
	asynqCleanup(b, e.Client, qname)
	c := asynq.NewClientFromRedisClient(e.Client)
	data, _ := json.Marshal(benchPayload)
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < queueConcurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := c.Enqueue(asynq.NewTask("execution", data), asynq.Queue(qname)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	srv := asynq.NewServerFromRedisClient(e.Client, asynq.Config{
		Concurrency: concurrency,
		Queues:      map[string]int{qname: 1},
		LogLevel:    asynq.FatalLevel,
	})
	var n atomic.Int64
	done := make(chan struct{})
	e.Warm(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		if n.Add(1) == int64(b.N) {
			close(done)
		}
		return nil
	})); err != nil {
		b.Fatal(err)
	}
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	srv.Shutdown()
	e.ReportTrips(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
}

// BenchmarkQueueProcessLimits: BenchmarkQueueProcess's processing with
// the global limits off and on (queueConcurrency handlers, no-op): a
// global cap of half the handlers, a rate limit that never binds (its
// bookkeeping only), and 4 groups capped at 4 each. asynq has no global,
// rate or group limit (asynq #542, #609); its nearest equivalent is a
// server's own concurrency, per process: a server of half the handlers.
func BenchmarkQueueProcessLimits(b *testing.B) {
	b.Run("redschema/off", func(b *testing.B) { processQueue(b, nil, nil) })
	b.Run("redschema/global-cap", func(b *testing.B) {
		processQueue(b, []queue.Option{queue.WithGlobalConcurrency(queueConcurrency / 2)}, nil)
	})
	b.Run("redschema/rate", func(b *testing.B) {
		processQueue(b, []queue.Option{queue.WithRateLimit(1000000, time.Second)}, nil) // 1000000: the most WithRateLimit takes
	})
	b.Run("redschema/groups", func(b *testing.B) {
		groups := []string{"tenant-a", "tenant-b", "tenant-c", "tenant-d"}
		processQueue(b, []queue.Option{queue.WithGroupLimits(queue.GroupLimit{Concurrency: queueConcurrency / 4})},
			func(i int) []queue.EnqueueOption { return []queue.EnqueueOption{queue.WithGroup(groups[i%4])} })
	})
	b.Run("asynq/server-concurrency", func(b *testing.B) { processAsynq(b, queueConcurrency/2) })
}
