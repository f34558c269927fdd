package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

func newRecorder(t testing.TB, e *harness.Env, rdb redis.UniversalClient, opts ...Option) *Recorder {
	t.Helper()
	if rdb == nil {
		rdb = e.Client
	}
	r, err := New(rdb, append(testOptions(e, WithoutFlusher()), opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// testOptions returns the options of a test's recorder: its namespace,
// and on miniredis a local clock that follows the harness's (Advance moves
// TIME but not the wall clock), then more.
func testOptions(e *harness.Env, more ...Option) []Option {
	opts := []Option{WithNamespace(e.NS)}
	if e.Mini != nil {
		opts = append(opts, withClock(e.Now))
	}
	return append(opts, more...)
}

func getInt(t testing.TB, e *harness.Env, key string) int64 {
	t.Helper()
	v, err := e.Client.Get(context.Background(), key).Int64()
	if err == redis.Nil {
		return 0
	}
	require.NoError(t, err, key)
	return v
}

func mustKey(t testing.TB, ns keys.Namespace, tpl *keys.Template, args ...string) string {
	t.Helper()
	k, err := tpl.Key(ns, args...)
	require.NoError(t, err)
	return k
}

// Seed 000's keys, byte for byte under the seed's "ha:" prefix, with the
// middleware's semantics.
func TestSeedKeys(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	ns := e.NS.Sub("ha:")
	rec := newRecorder(t, e, nil, WithNamespace(ns))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/users", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("POST /api/auth/login", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) })
	mux.HandleFunc("PUT /api/forum/questions/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) })
	h := Middleware(rec, WithoutLoopback())(mux)
	do := func(method, path, remote string) {
		req := httptest.NewRequest(method, path, nil)
		if remote != "" {
			req.RemoteAddr = remote
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	do("GET", "/api/users", "")
	do("GET", "/api/users", "127.0.0.1:5000")
	do("POST", "/api/auth/login", "")
	do("PUT", "/api/forum/questions/123", "")
	do("PUT", "/api/forum/questions/456", "[::1]:80")
	do("GET", "/nowhere", "")
	require.NoError(t, rec.Flush(ctx))

	p := ns.Prefix
	want := map[string]int64{
		p + "requests:total":                                      4, // two of six came from loopback (WithoutLoopback)
		p + "requests:accepted":                                   4, // the two 429s were refused
		p + "errors:total":                                        4, // 401, two 429s, 404
		p + "requests:endpoint:GET /api/users":                    2,
		p + "requests:endpoint:POST /api/auth/login":              1,
		p + "requests:endpoint:PUT /api/forum/questions/%7Bid%7D": 2, // braces would be a hash tag
		p + "requests:endpoint:GET (unmatched)":                   1,
		p + "errors:endpoint:POST /api/auth/login":                1,
		p + "errors:endpoint:PUT /api/forum/questions/%7Bid%7D":   2,
		p + "errors:endpoint:GET (unmatched)":                     1,
		p + "connections:http:current":                            0,
		p + "connections:http:max_since_startup":                  1,
	}
	for k, v := range want {
		assert.Equal(t, v, getInt(t, e, k), k)
	}
	for _, k := range []string{p + "requests:speed_per_second", p + "requests:max_speed_per_second"} {
		_, err := e.Client.Get(ctx, k).Int64()
		assert.NoError(t, err, k)
	}
	// Seed 000's keys are persistent; everything else has a TTL.
	e.RequireTTLs(func(k string) bool {
		if len(k) > len(p) && k[:len(p)] == p {
			_, ok := want[k]
			return ok || k == p+"requests:speed_per_second" || k == p+"requests:max_speed_per_second" ||
				k == mustKey(t, ns, endpointTotalsKey, endpointRequestsTotals) || k == mustKey(t, ns, endpointTotalsKey, endpointErrorsTotals)
		}
		return false
	})
	// Seed 001's api_requests_total and api_latency_ms.
	assert.Equal(t, int64(2), getInt(t, e, mustKey(t, ns, counterKey, "api_requests_total", "/api/forum/questions/{id}|PUT|429")))
	assert.Equal(t, int64(2), getInt(t, e, mustKey(t, ns, histogramKey, "api_latency_ms", "/api/users", "count")))
}

// By default requests from loopback addresses count in requests:total
// like any other; WithoutLoopback leaves them out of it, and only of it.
func TestLoopback(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for _, skip := range []bool{false, true} {
		ns := e.NS.Sub(strconv.FormatBool(skip) + ":")
		rec := newRecorder(t, e, nil, WithNamespace(ns))
		var opts []MiddlewareOption
		if skip {
			opts = append(opts, WithoutLoopback())
		}
		h := Middleware(rec, opts...)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		for _, remote := range []string{"127.0.0.1:5000", "[::1]:80", "localhost:1", "127.9.9.9:1", "192.0.2.1:1234", "[2001:db8::1]:1"} {
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = remote
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
		require.NoError(t, rec.Flush(ctx))
		want := int64(6)
		if skip {
			want = 2
		}
		assert.Equal(t, want, getInt(t, e, ns.Prefix+"requests:total"), "skip %v", skip)
		assert.Equal(t, int64(6), getInt(t, e, ns.Prefix+"requests:accepted"), "skip %v", skip)
		assert.Equal(t, int64(6), getInt(t, e, ns.Prefix+"requests:endpoint:GET (unmatched)"), "skip %v", skip)
	}
}

func TestCountersGaugesHistograms(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rec := newRecorder(t, e, nil)
	require.NoError(t, rec.Declare(CommonMetrics()...))
	tokens, err := rec.Counter("ai_tokens_used", "model", "type")
	require.NoError(t, err)
	tokens.Add(120, "gpt-4", "prompt")
	tokens.Add(30, "gpt-4", "completion")
	tokens.With("gpt-4", "prompt").Add(5)
	sessions, err := rec.Gauge("active_sessions", Sum)
	require.NoError(t, err)
	sessions.Add(3)
	sessions.Add(-1)
	depth, err := rec.Gauge("queue_depth", Latest, "queue_name")
	require.NoError(t, err)
	depth.Set(17, "emails")
	lat, err := rec.Histogram("api_latency_ms", LatencyBuckets(), "endpoint")
	require.NoError(t, err)
	for _, v := range []float64{3, 7, 7, 120, 20000} {
		lat.Observe(v, "/api/users")
	}
	require.NoError(t, rec.Flush(ctx))

	assert.Equal(t, int64(125), getInt(t, e, mustKey(t, e.NS, counterKey, "ai_tokens_used", "gpt-4|prompt")))
	assert.Equal(t, int64(30), getInt(t, e, mustKey(t, e.NS, counterKey, "ai_tokens_used", "gpt-4|completion")))
	assert.Equal(t, int64(2), getInt(t, e, mustKey(t, e.NS, gaugeKey, "active_sessions", "-")))
	assert.Equal(t, int64(17), getInt(t, e, mustKey(t, e.NS, gaugeKey, "queue_depth", "emails")))
	assert.Equal(t, int64(2), getInt(t, e, mustKey(t, e.NS, histogramKey, "api_latency_ms", "/api/users", "10")))
	assert.Equal(t, int64(1), getInt(t, e, mustKey(t, e.NS, histogramKey, "api_latency_ms", "/api/users", "+Inf")))
	assert.Equal(t, int64(5), getInt(t, e, mustKey(t, e.NS, histogramKey, "api_latency_ms", "/api/users", "count")))
	ttl := e.Client.TTL(ctx, mustKey(t, e.NS, counterKey, "ai_tokens_used", "gpt-4|prompt")).Val()
	assert.InDelta(t, counterTTL.Seconds(), ttl.Seconds(), 2)
	ttl = e.Client.TTL(ctx, mustKey(t, e.NS, gaugeKey, "active_sessions", "-")).Val()
	assert.InDelta(t, gaugeTTL.Seconds(), ttl.Seconds(), 2)
	e.RequireTTLs(nil)

	rd, err := NewReader(e.Client, rec.Definitions(), WithNamespace(e.NS))
	require.NoError(t, err)
	snap, err := rd.Read(ctx)
	require.NoError(t, err)
	byName := map[string]MetricValues{}
	for _, m := range snap.Metrics {
		byName[m.Name] = m
	}
	require.Len(t, byName["ai_tokens_used"].Series, 2)
	assert.Equal(t, SeriesValues{Labels: []string{"gpt-4", "completion"}, Value: 30}, byName["ai_tokens_used"].Series[0])
	assert.Equal(t, []SeriesValues{{Labels: nil, Value: 2}}, byName["active_sessions"].Series)
	assert.Equal(t, []SeriesValues{{Labels: []string{"emails"}, Value: 17}}, byName["queue_depth"].Series)
	h := byName["api_latency_ms"].Series
	require.Len(t, h, 1)
	assert.Equal(t, []int64{1, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5}, h[0].Buckets)
	assert.Equal(t, int64(5), h[0].Count)
	assert.InDelta(t, 20137.0, h[0].Sum, 1e-9)
}

func TestLabelValuesRoundTrip(t *testing.T) {
	for _, vals := range [][]string{{"a", "b"}, {"", "x|y"}, {"50%", "-"}, {"%7C", "%00"}} {
		dim, ok := joinValues(vals)
		require.True(t, ok)
		got, ok := SplitDimension(dim, len(vals))
		require.True(t, ok, dim)
		assert.Equal(t, vals, got, dim)
	}
	got, ok := SplitDimension("%2D", 1)
	assert.True(t, ok)
	assert.Equal(t, []string{"-"}, got)
	_ = strconv.Itoa
	_ = time.Second
}

var redisNoRetry = redis.Options{MaxRetries: -1}
