package prom

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/metrics"
)

func TestCollector(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec, err := metrics.New(e.Client, metrics.WithNamespace(e.NS), metrics.WithoutFlusher())
	require.NoError(t, err)
	require.NoError(t, rec.Declare(metrics.CommonMetrics()...))
	h := rec.HTTP()
	h.Start()
	h.Record(metrics.Request{Method: "GET", Route: "/api/users", Status: 200, Duration: 3e6})
	h.Record(metrics.Request{Method: "GET", Route: "/api/users", Status: 404, Duration: 40e6})
	tokens, _ := rec.Counter("ai_tokens_used", "model", "type")
	tokens.Add(12, "m1", "prompt")
	depth, _ := rec.Gauge("queue_depth", metrics.Latest, "queue_name")
	depth.Set(4, "emails")
	require.NoError(t, rec.Flush(ctx))

	c := e.FreshClient()
	trips := harness.CountTrips(c)
	rd, err := metrics.NewReader(c, rec.Definitions(), metrics.WithNamespace(e.NS))
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(NewCollector(rd)))
	_, err = reg.Gather() // the first read loads the gauge script (a second pipeline, once)
	require.NoError(t, err)
	trips.Reset()

	want := `
# HELP http_requests_total Non-localhost HTTP requests across all instances (requests:total).
# TYPE http_requests_total counter
http_requests_total 2
# HELP http_errors_total HTTP responses with status >= 400 (errors:total).
# TYPE http_errors_total counter
http_errors_total 1
# HELP http_connections In-flight HTTP requests of the live instances.
# TYPE http_connections gauge
http_connections 1
# HELP http_endpoint_requests_total HTTP requests per endpoint "METHOD route".
# TYPE http_endpoint_requests_total counter
http_endpoint_requests_total{endpoint="GET /api/users"} 2
# HELP ai_tokens_used_total counter ai_tokens_used from redschema metrics
# TYPE ai_tokens_used_total counter
ai_tokens_used_total{model="m1",type="prompt"} 12
# HELP api_requests_total counter api_requests_total from redschema metrics
# TYPE api_requests_total counter
api_requests_total{endpoint="/api/users",method="GET",status="200"} 1
api_requests_total{endpoint="/api/users",method="GET",status="404"} 1
# HELP queue_depth gauge queue_depth from redschema metrics
# TYPE queue_depth gauge
queue_depth{queue_name="emails"} 4
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"http_requests_total", "http_errors_total", "http_connections", "http_endpoint_requests_total",
		"ai_tokens_used_total", "api_requests_total", "queue_depth"))
	if e.Backend != harness.Cluster {
		assert.Equal(t, int64(1), trips.Total(), "one pipeline per scrape (GatherAndCompare scrapes once)")
	} else {
		assert.Zero(t, trips.Single(), "only pipelines")
	}

	mfs, err := reg.Gather()
	require.NoError(t, err)
	var found bool
	for _, mf := range mfs {
		if mf.GetName() != "api_latency_seconds" {
			continue
		}
		found = true
		m := mf.GetMetric()[0]
		hist := m.GetHistogram()
		assert.Equal(t, uint64(2), hist.GetSampleCount())
		assert.InDelta(t, 0.043, hist.GetSampleSum(), 1e-9)
		assert.Equal(t, 0.005, hist.GetBucket()[0].GetUpperBound())
		assert.Equal(t, uint64(1), hist.GetBucket()[0].GetCumulativeCount())
		assert.Equal(t, uint64(2), hist.GetBucket()[3].GetCumulativeCount(), "le 0.05")
	}
	assert.True(t, found, "api_latency_ms is exposed in seconds")
	require.NoError(t, rec.Close(ctx))
}

// A read that fails fails the scrape instead of reporting zeros.
func TestCollectorReportsErrors(t *testing.T) {
	e := harness.New(t)
	c, p := e.ProxyClient(&redis.Options{MaxRetries: -1})
	rd, err := metrics.NewReader(c, nil, metrics.WithNamespace(e.NS))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(NewCollector(rd)))
	p.Stall()
	defer p.Resume()
	col := NewCollector(rd, WithTimeout(100e6))
	ch := make(chan prometheus.Metric, 100)
	col.Collect(ch)
	close(ch)
	m := <-ch
	require.NotNil(t, m)
	assert.Error(t, m.Write(&dtoMetric))
	_ = context.Background()
}
