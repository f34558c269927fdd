package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/metrics"
)

// metricsFlows: seed 000 §1-2, the home-automation backend's request
// metrics, shared by the library's Recorder and Reader with
// metrics.WithSharedKeys and the backend's own INCRBY / INCR / DECR.
func metricsFlows() []flow {
	clients := []string{"redis4", "redis6"} // seed 000's service uses node-redis
	return []flow{
		{seed: "000", name: "metrics counters node->go", area: "metrics", clients: clients, run: metricsCountersNodeGo},
		{seed: "000", name: "metrics counters go->node", area: "metrics", clients: clients, run: metricsCountersGoNode},
		{seed: "000", name: "metrics connections node+go at once", area: "metrics", clients: clients, run: metricsConnectionsBoth},
		{seed: "000", name: "metrics connections go->node", area: "metrics", clients: clients, run: metricsConnectionsGoNode},
		{seed: "000", name: "metrics raw-path endpoint go->node", area: "metrics", clients: clients, run: metricsRawPathGoNode,
			documented: "endpoints are route templates, not the seed's raw paths (one persistent key per ID); the Reader counts both, WithRoute can pass the raw path: docs/metrics.md#shared-keys-running-beside-the-backends-node-service"},
		{seed: "000", name: "metrics raw-path WithRoute go->node", area: "metrics", clients: clients, run: metricsRawPathRouteGoNode},
	}
}

// metricsNS is the seed's prefix, byte-identical keys (standalone).
var metricsNS = keys.Namespace{Prefix: "ha:", NoHashTags: true}

// metricsSite is a Recorder WithSharedKeys, flushing every 20ms, and
// its Middleware over the seed's endpoints; hold blocks the requests of
// GET /api/forum/questions/open until it is closed.
type metricsSite struct {
	rec  *metrics.Recorder
	h    http.Handler
	hold chan struct{}
}

func newMetricsSite(e *env, opts ...metrics.MiddlewareOption) (*metricsSite, error) {
	rec, err := metrics.New(e.rdb, metrics.WithNamespace(metricsNS), metrics.WithSharedKeys(), metrics.WithInterval(20*time.Millisecond))
	if err != nil {
		return nil, err
	}
	s := &metricsSite{rec: rec, hold: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/forum/questions", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("fail") != "" {
			w.WriteHeader(500)
		}
	})
	mux.HandleFunc("GET /api/forum/questions/open", func(w http.ResponseWriter, r *http.Request) { <-s.hold })
	mux.HandleFunc("PUT /api/forum/questions/{id}", func(w http.ResponseWriter, r *http.Request) {})
	s.h = metrics.Middleware(rec, opts...)(mux)
	return s, nil
}

func (s *metricsSite) serve(method, target string) {
	s.h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, target, nil))
}

// read is the Go side's view: the Reader WithSharedKeys.
func (s *metricsSite) read(ctx context.Context, e *env) (*metrics.HTTPTotals, error) {
	rd, err := metrics.NewReader(e.rdb, nil, metrics.WithNamespace(metricsNS), metrics.WithSharedKeys())
	if err != nil {
		return nil, err
	}
	snap, err := rd.Read(ctx)
	if err != nil {
		return nil, err
	}
	return &snap.HTTP, nil
}

// metricsAgree checks that the endpoint rows add up to the totals.
func metricsAgree(h *metrics.HTTPTotals) error {
	var reqs, errs int64
	for _, ep := range h.Endpoints {
		reqs += ep.Requests
		errs += ep.Errors
	}
	if reqs != h.Total || errs != h.Errors {
		return diverge("endpoint sums %d requests, %d errors; totals %d, %d (%+v)", reqs, errs, h.Total, h.Errors, h.Endpoints)
	}
	return nil
}

// metricsNodeRead GETs keys with the Node client.
func metricsNodeRead(ctx context.Context, e *env, ks ...string) (map[string]*string, error) {
	var out map[string]*string
	err := e.node(ctx, "read", map[string]any{"keys": ks}, &out)
	return out, err
}

func metricsStr(p *string) string {
	if p == nil {
		return "(nil)"
	}
	return *p
}

// metricsCountersNodeGo: the backend counts 5 requests with the seed's
// own incrBy lines while the library counts 3 (one an error); the Reader
// sees 8, and its endpoint rows add up to it.
func metricsCountersNodeGo(ctx context.Context, e *env) error {
	s, err := newMetricsSite(e)
	if err != nil {
		return err
	}
	defer s.rec.Close(ctx)
	s.serve("GET", "/api/forum/questions")
	s.serve("GET", "/api/forum/questions?fail=1")
	if err := e.node(ctx, "requests", map[string]any{"n": 5}, nil); err != nil {
		return err
	}
	s.serve("GET", "/api/forum/questions")
	if err := s.rec.Flush(ctx); err != nil {
		return err
	}
	h, err := s.read(ctx, e)
	if err != nil {
		return err
	}
	if h.Total != 8 || h.Errors != 1 {
		return diverge("Reader: total %d, errors %d; want 8, 1", h.Total, h.Errors)
	}
	want := []metrics.EndpointTotals{{Endpoint: "GET /api/forum/questions", Requests: 8, Errors: 1}}
	if fmt.Sprint(h.Endpoints) != fmt.Sprint(want) {
		return diverge("Reader endpoints %+v, want %+v (the seed's key and ours are one)", h.Endpoints, want)
	}
	return metricsAgree(h)
}

// metricsCountersGoNode: the library counts 4 requests (one an error);
// the backend reads the seed's keys and sees them.
func metricsCountersGoNode(ctx context.Context, e *env) error {
	s, err := newMetricsSite(e)
	if err != nil {
		return err
	}
	defer s.rec.Close(ctx)
	for range 3 {
		s.serve("GET", "/api/forum/questions")
	}
	s.serve("GET", "/api/forum/questions?fail=1")
	if err := s.rec.Flush(ctx); err != nil {
		return err
	}
	want := map[string]string{
		"ha:requests:total":                             "4",
		"ha:requests:accepted":                          "4",
		"ha:errors:total":                               "1",
		"ha:requests:endpoint:GET /api/forum/questions": "4",
		"ha:errors:endpoint:GET /api/forum/questions":   "1",
	}
	var ks []string
	for k := range want {
		ks = append(ks, k)
	}
	got, err := metricsNodeRead(ctx, e, ks...)
	if err != nil {
		return err
	}
	for k, v := range want {
		if metricsStr(got[k]) != v {
			return diverge("the backend reads %s = %s, want %s", k, metricsStr(got[k]), v)
		}
	}
	return nil
}

// metricsConnectionsBoth: the backend opens 40 connections (INCR, its
// requests counted, DECR; 2 left open) while the library's middleware
// serves requests on 4 goroutines (3 left open) and flushes every 20ms;
// at the end the shared count is 2 + 3, the Reader says so, its endpoint
// sum agrees with the total, and after the library's Close it is the
// backend's 2.
func metricsConnectionsBoth(ctx context.Context, e *env) error {
	s, err := newMetricsSite(e)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			close(s.hold)
		}
		s.rec.Close(ctx)
	}()
	var open sync.WaitGroup
	for range 3 {
		open.Add(1)
		go func() { defer open.Done(); s.serve("GET", "/api/forum/questions/open") }()
	}
	stop := make(chan struct{})
	var served [4]int64
	var wg sync.WaitGroup
	for g := range served {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.serve("GET", "/api/forum/questions")
				served[g]++
				time.Sleep(time.Millisecond)
			}
		}()
	}
	var last int64
	nodeErr := e.node(ctx, "connections", map[string]any{"n": 40, "leave": 2, "ms": 2}, &last)
	close(stop)
	wg.Wait()
	if nodeErr != nil {
		return nodeErr
	}
	var ours int64
	for _, n := range served {
		ours += n
	}
	if err := s.rec.Flush(ctx); err != nil {
		return err
	}
	cur, err := e.rdb.Get(ctx, "ha:connections:http:current").Int64()
	if err != nil {
		return err
	}
	if cur != 2+3 {
		return diverge("connections:http:current %d, want the backend's 2 + the library's 3", cur)
	}
	h, err := s.read(ctx, e)
	if err != nil {
		return err
	}
	if h.Connections != 5 || h.Total != 40+ours {
		return diverge("Reader: connections %d, total %d; want 5, %d", h.Connections, h.Total, 40+ours)
	}
	if h.MaxConnections < 5 {
		return diverge("max_since_startup %d below the count 5", h.MaxConnections)
	}
	if err := metricsAgree(h); err != nil {
		return err
	}
	close(s.hold)
	closed = true
	open.Wait()
	if err := s.rec.Close(ctx); err != nil {
		return err
	}
	if cur, err = e.rdb.Get(ctx, "ha:connections:http:current").Int64(); err != nil {
		return err
	}
	if cur != 2 {
		return diverge("after the library's Close connections:http:current is %d, want the backend's 2", cur)
	}
	return nil
}

// metricsConnectionsGoNode: the library holds 2 requests open; the
// backend's next connection counts 3; when the library's requests end
// the count is the backend's 1, and its DECR brings it to 0.
func metricsConnectionsGoNode(ctx context.Context, e *env) error {
	s, err := newMetricsSite(e)
	if err != nil {
		return err
	}
	defer s.rec.Close(ctx)
	var open sync.WaitGroup
	for range 2 {
		open.Add(1)
		go func() { defer open.Done(); s.serve("GET", "/api/forum/questions/open") }()
	}
	if err := metricsWait(ctx, func() bool {
		v, err := e.rdb.Get(ctx, "ha:connections:http:current").Int64()
		return err == nil && v == 2
	}); err != nil {
		return diverge("the library's 2 open requests never reached connections:http:current: %v", err)
	}
	var n int64
	if err := e.node(ctx, "incr", nil, &n); err != nil {
		return err
	}
	if n != 3 {
		return diverge("the backend's INCR gave %d, want 3 (the library's 2 + its own)", n)
	}
	close(s.hold)
	open.Wait()
	if err := s.rec.Flush(ctx); err != nil {
		return err
	}
	if err := s.rec.Flush(ctx); err != nil { // a background flush may have had the first
		return err
	}
	got, err := metricsNodeRead(ctx, e, "ha:connections:http:current")
	if err != nil {
		return err
	}
	if v := metricsStr(got["ha:connections:http:current"]); v != "1" {
		return diverge("after the library's requests ended the backend reads %s, want its own 1", v)
	}
	if err := e.node(ctx, "decr", nil, &n); err != nil {
		return err
	}
	if n != 0 {
		return diverge("the backend's DECR gave %d, want 0", n)
	}
	return nil
}

// metricsRawPathGoNode: the library's middleware counts PUT
// /api/forum/questions/123 under its route template; the backend's
// dashboard, reading the raw path's key, finds nothing.
func metricsRawPathGoNode(ctx context.Context, e *env) error {
	return metricsRawPath(ctx, e)
}

// metricsRawPathRouteGoNode: the same with WithRoute(r.URL.Path): the
// backend finds the library's count under the raw path's key.
func metricsRawPathRouteGoNode(ctx context.Context, e *env) error {
	return metricsRawPath(ctx, e, metrics.WithRoute(func(r *http.Request) string { return r.URL.Path }))
}

func metricsRawPath(ctx context.Context, e *env, opts ...metrics.MiddlewareOption) error {
	s, err := newMetricsSite(e, opts...)
	if err != nil {
		return err
	}
	defer s.rec.Close(ctx)
	s.serve("PUT", "/api/forum/questions/123")
	if err := s.rec.Flush(ctx); err != nil {
		return err
	}
	const k = "ha:requests:endpoint:PUT /api/forum/questions/123"
	got, err := metricsNodeRead(ctx, e, k)
	if err != nil {
		return err
	}
	if v := metricsStr(got[k]); v != "1" {
		return diverge("the backend reads %s = %s, want 1", k, v)
	}
	return nil
}

// metricsWait polls cond every 10ms until it holds or 2s pass.
func metricsWait(ctx context.Context, cond func() bool) error {
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within 2s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
