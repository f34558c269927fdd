package bench

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/metrics"
)

// metricsParallelism is the goroutines per CPU of every recording
// benchmark.
const metricsParallelism = 8

// BenchmarkMetricsRecord measures recording one request's count: our
// in-memory add (flushed in the background to the real Redis, whose
// pipelines trips/op amortises over the requests), a direct INCR per
// request, and client_golang's Counter.Inc, with and without label
// lookups; "redschema/http" is the middleware's whole per-request record
// (seed 000's counters, api_requests_total, api_latency_ms, speed).
func BenchmarkMetricsRecord(b *testing.B) {
	newRec := func(b *testing.B, e *benchutil.Env) *metrics.Recorder {
		rec, err := metrics.New(e.Client, metrics.WithNamespace(e.NS))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = rec.Close(context.Background()) })
		return rec
	}
	parallel := func(b *testing.B, e *benchutil.Env, body func(pb *testing.PB)) {
		e.Warm(b)
		b.SetParallelism(metricsParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(body)
		b.StopTimer()
		e.ReportTrips(b)
	}
	b.Run("redschema/counter", func(b *testing.B) {
		e := benchutil.New(b)
		c, err := newRec(b, e).Counter("api_requests_total")
		if err != nil {
			b.Fatal(err)
		}
		s := c.With()
		parallel(b, e, func(pb *testing.PB) {
			for pb.Next() {
				s.Inc()
			}
		})
	})
	b.Run("client_golang/counter", func(b *testing.B) {
		e := benchutil.New(b)
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "api_requests_total"})
		parallel(b, e, func(pb *testing.PB) {
			for pb.Next() {
				c.Inc()
			}
		})
	})
	b.Run("redschema/labels", func(b *testing.B) {
		e := benchutil.New(b)
		c, err := newRec(b, e).Counter("api_requests_total", "endpoint", "method", "status")
		if err != nil {
			b.Fatal(err)
		}
		parallel(b, e, func(pb *testing.PB) {
			for pb.Next() {
				c.Inc("/api/users/{id}", "GET", "200")
			}
		})
	})
	b.Run("client_golang/labels", func(b *testing.B) {
		e := benchutil.New(b)
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "api_requests_total"}, []string{"endpoint", "method", "status"})
		parallel(b, e, func(pb *testing.PB) {
			for pb.Next() {
				c.WithLabelValues("/api/users/{id}", "GET", "200").Inc()
			}
		})
	})
	b.Run("redschema/http", func(b *testing.B) {
		e := benchutil.New(b)
		h := newRec(b, e).HTTP()
		parallel(b, e, func(pb *testing.PB) {
			for pb.Next() {
				h.Start()
				h.Done(metrics.Request{Method: "GET", Route: "/api/users/{id}", Status: 200, Duration: 2 * time.Millisecond})
			}
		})
	})
	b.Run("incr", func(b *testing.B) {
		e := benchutil.New(b)
		key := e.NS.Prefix + "requests:total"
		parallel(b, e, func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if err := e.Client.Incr(ctx, key).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkMetricsFlush measures one flush of 10,000 counter series (one
// op = one flush: one pipeline), with the Redis CPU it costs
// (redis-µs/op, from INFO commandstats) and the Redis memory per series
// (B/series: its counter key and its field in the metric's totals hash).
func BenchmarkMetricsFlush(b *testing.B) {
	const series = 10000
	e := benchutil.New(b)
	rec, err := metrics.New(e.Client, metrics.WithNamespace(e.NS), metrics.WithoutFlusher(), metrics.WithMaxSeries(series))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rec.Close(context.Background()) }()
	c, err := rec.Counter("hits", "path")
	if err != nil {
		b.Fatal(err)
	}
	handles := make([]*metrics.CounterSeries, series)
	for i := range handles {
		handles[i] = c.With("/p/" + strconv.Itoa(i))
	}
	ctx := context.Background()
	fill := func() {
		for _, h := range handles {
			h.Inc()
		}
	}
	fill()
	if err := rec.Flush(ctx); err != nil { // loads the script, makes the keys
		b.Fatal(err)
	}
	cpu0 := redisCPU(b, e.Client)
	e.Warm(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		fill()
		b.StartTimer()
		if err := rec.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	e.ReportTrips(b)
	b.ReportMetric(float64(redisCPU(b, e.Client)-cpu0)/float64(b.N), "redis-µs/op")
	bytes, n, err := benchutil.MemoryUnder(ctx, e.Client, e.NS.Prefix)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(bytes)/series, "B/series")
	b.ReportMetric(float64(n), "keys")
}

// redisCPU sums the usec of INFO commandstats over every master: the
// server CPU spent in commands so far (a helper benchutil lacks).
func redisCPU(b *testing.B, c redis.UniversalClient) int64 {
	var total atomic.Int64
	var mu sync.Mutex
	err := keys.ForEachNode(context.Background(), c, func(ctx context.Context, n redis.UniversalClient) error {
		s, err := n.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, line := range strings.Split(s, "\n") {
			_, rest, ok := strings.Cut(line, "usec=")
			if !ok || !strings.HasPrefix(line, "cmdstat_") {
				continue
			}
			v, _, _ := strings.Cut(rest, ",")
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			total.Add(n)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return total.Load()
}
