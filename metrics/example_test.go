package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/metrics"
)

func exampleClient() (*redis.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	return rdb, func() { _ = rdb.Close(); m.Close() }
}

// The middleware records the HTTP request metrics per route template;
// the flush writes them under the home-automation backend's "ha:" prefix.
func ExampleMiddleware() {
	rdb, done := exampleClient()
	defer done()
	ctx := context.Background()
	rec, err := metrics.New(rdb, metrics.WithNamespace(keys.Namespace{Prefix: "ha:"}))
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/users/{id}", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("POST /api/auth/login", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad credentials", http.StatusUnauthorized)
	})
	h := metrics.Middleware(rec)(mux)
	for _, path := range []string{"/api/users/1", "/api/users/2", "/api/users/3"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/api/auth/login", nil))

	if err := rec.Close(ctx); err != nil { // flushes what is left
		panic(err)
	}
	for _, k := range []string{"ha:requests:total", "ha:errors:total", "ha:requests:endpoint:GET /api/users/%7Bid%7D", "ha:errors:endpoint:POST /api/auth/login"} {
		fmt.Println(k, rdb.Get(ctx, k).Val())
	}
	// Output:
	// ha:requests:total 4
	// ha:errors:total 1
	// ha:requests:endpoint:GET /api/users/%7Bid%7D 3
	// ha:errors:endpoint:POST /api/auth/login 1
}

// Counters, gauges and histograms of the AI platform's metrics, read back
// cluster-wide in one pipeline.
func ExampleReader_Read() {
	rdb, done := exampleClient()
	defer done()
	ctx := context.Background()
	rec, err := metrics.New(rdb, metrics.WithoutFlusher())
	if err != nil {
		panic(err)
	}
	defer rec.Close(ctx)
	if err := rec.Declare(metrics.CommonMetrics()...); err != nil {
		panic(err)
	}
	tokens, _ := rec.Counter("ai_tokens_used", "model", "type")
	tokens.Add(1200, "gpt-4", "prompt")
	tokens.Add(300, "gpt-4", "completion")
	depth, _ := rec.Gauge("queue_depth", metrics.Latest, "queue_name")
	depth.Set(7, "emails")
	latency, _ := rec.Histogram("api_latency_ms", metrics.LatencyBuckets(), "endpoint")
	latency.Observe(42, "/api/users")
	if err := rec.Flush(ctx); err != nil {
		panic(err)
	}

	rd, err := metrics.NewReader(rdb, rec.Definitions())
	if err != nil {
		panic(err)
	}
	snap, err := rd.Read(ctx)
	if err != nil {
		panic(err)
	}
	for _, m := range snap.Metrics {
		for _, s := range m.Series {
			if m.Kind == metrics.KindHistogram {
				fmt.Println(m.Name, s.Labels, "count", s.Count, "sum", s.Sum)
				continue
			}
			fmt.Println(m.Name, s.Labels, s.Value)
		}
	}
	// Output:
	// api_latency_ms [/api/users] count 1 sum 42
	// ai_tokens_used [gpt-4 completion] 300
	// ai_tokens_used [gpt-4 prompt] 1200
	// queue_depth [emails] 7
}

// A Rollup hands closed buckets to a sink, once across instances.
func ExampleRollup() {
	rdb, done := exampleClient()
	defer done()
	ctx := context.Background()
	rec, err := metrics.New(rdb, metrics.WithoutFlusher(), metrics.WithRollup())
	if err != nil {
		panic(err)
	}
	defer rec.Close(ctx)
	uploads, _ := rec.Counter("file_uploads_bytes")
	uploads.Add(4096)
	if err := rec.Flush(ctx); err != nil {
		panic(err)
	}
	r, err := rec.Rollup([]string{"file_uploads_bytes"}, func(ctx context.Context, b metrics.Bucket) error {
		fmt.Println(b.Metric, b.Tier, b.Values["-"]) // store it by b.ID() to stay exact across a crash
		return nil
	})
	if err != nil {
		panic(err)
	}
	n, err := r.RunOnce(ctx)
	fmt.Println(n, err)
	// Output:
	// file_uploads_bytes minute 4096
	// 1 <nil>
}
