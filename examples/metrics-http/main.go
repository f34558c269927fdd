// Command metrics-http is a web service that counts its requests in Redis
// with seed 000's keys (under "ha:", or REDIS_KEY_PREFIX) and seed 001's metrics: the
// middleware records every request in memory and one pipeline per second
// flushes the deltas, so the request path never waits for Redis. At start
// it sends itself a burst of requests from several workers and prints the
// cluster-wide totals; then it serves until SIGINT or SIGTERM.
//
//	go run ./examples/metrics-http                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/metrics-http
//	curl -s http://127.0.0.1:8080/metrics
//
// Run several copies against one REDIS_URL (with different ADDR): the
// totals are the sum over all of them, exactly.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/metrics"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, connect.HTTPAddr(), os.Stdout, nil); err != nil {
		log.Fatal(err)
	}
}

// loadRequests is the size of the start-up burst.
const loadRequests = 500

// run serves on addr until ctx ends; ready, if not nil, receives the
// address once the burst's totals are printed.
func run(ctx context.Context, addr string, out io.Writer, ready chan<- string) error {
	rdb, closeRedis, err := connect.FromEnv(ctx, out)
	if err != nil {
		return err
	}
	defer closeRedis()
	prefix, ok := os.LookupEnv("REDIS_KEY_PREFIX") // seed 000's, "ha:" by default
	if !ok {
		prefix = "ha:"
	}
	ns := keys.Namespace{Prefix: prefix}
	rec, err := metrics.New(rdb, metrics.WithNamespace(ns), metrics.WithRollup())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rec.Close(cctx); err != nil {
			fmt.Fprintln(out, "close:", err)
		}
	}()
	if err := rec.Declare(metrics.CommonMetrics()...); err != nil {
		return err
	}
	tokens, err := rec.Counter("ai_tokens_used", "model", "type")
	if err != nil {
		return err
	}
	reader, err := metrics.NewReader(rdb, rec.Definitions(), metrics.WithNamespace(ns))
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/forum/questions/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "question %s\n", r.PathValue("id"))
	})
	mux.HandleFunc("POST /api/auth/login", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("password") != "secret" {
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, "welcome")
	})
	mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) {
		tokens.Add(42, "small-model", "prompt") // an in-memory add, flushed with the rest
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		snap, err := reader.Read(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		writeSnapshot(w, snap)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: metrics.Middleware(rec)(mux), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "listening on %s (GET /metrics)\n", base)

	if err := load(ctx, base); err != nil {
		stopServer(srv)
		return err
	}
	if err := rec.Flush(ctx); err != nil { // the background flusher would do it within a second
		stopServer(srv)
		return err
	}
	snap, err := reader.Read(ctx)
	if err != nil {
		stopServer(srv)
		return err
	}
	fmt.Fprintf(out, "after %d requests: requests:total=%d requests:accepted=%d errors:total=%d\n",
		loadRequests, snap.HTTP.Total, snap.HTTP.Accepted, snap.HTTP.Errors)
	for _, ep := range snap.HTTP.Endpoints {
		fmt.Fprintf(out, "  %-40s %5d requests %5d errors\n", ep.Endpoint, ep.Requests, ep.Errors)
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err := <-errc:
		stopServer(srv) // its handlers may still run
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// load sends loadRequests requests to base from 8 workers: questions,
// logins (one in five fails), chat messages.
func load(ctx context.Context, base string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	// The transport can dial a connection it then never uses (a request took
	// an idle one first); the server counts it as new, not idle, and
	// Shutdown waits 5 s for it. Closing the idle connections ends them.
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < loadRequests; i += 8 {
				method, path := "GET", "/api/forum/questions/"+strconv.Itoa(i)
				switch i % 5 {
				case 1:
					method, path = "POST", "/api/auth/login?password=secret"
				case 2:
					method, path = "POST", "/api/auth/login?password=wrong"
				case 3:
					method, path = "POST", "/api/chat"
				}
				req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
				if err != nil {
					errc <- err
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					errc <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// writeSnapshot prints the cluster-wide values, one "name{labels} value"
// per line (the Prometheus text format without types; the metrics/prom
// module gives the real exposition).
func writeSnapshot(w io.Writer, s *metrics.Snapshot) {
	h := s.HTTP
	fmt.Fprintf(w, "http_requests_total %d\nhttp_requests_accepted_total %d\nhttp_errors_total %d\n", h.Total, h.Accepted, h.Errors)
	fmt.Fprintf(w, "http_connections %d\nhttp_connections_max %d\nhttp_requests_per_second %d\nhttp_requests_per_second_max %d\n",
		h.Connections, h.MaxConnections, h.Speed, h.MaxSpeed)
	for _, ep := range h.Endpoints {
		fmt.Fprintf(w, "http_endpoint_requests_total{endpoint=%q} %d\n", ep.Endpoint, ep.Requests)
		fmt.Fprintf(w, "http_endpoint_errors_total{endpoint=%q} %d\n", ep.Endpoint, ep.Errors)
	}
	for _, m := range s.Metrics {
		for _, sv := range m.Series {
			labels := ""
			for i, l := range m.Labels {
				if i > 0 {
					labels += ","
				}
				labels += fmt.Sprintf("%s=%q", l, sv.Labels[i])
			}
			if labels != "" {
				labels = "{" + labels + "}"
			}
			if m.Kind == metrics.KindHistogram {
				fmt.Fprintf(w, "%s_count%s %d\n%s_sum%s %g\n", m.Name, labels, sv.Count, m.Name, labels, sv.Sum)
				continue
			}
			fmt.Fprintf(w, "%s%s %d\n", m.Name, labels, sv.Value)
		}
	}
}

// stopServer shuts srv down and waits for its handlers (at most 5 s), so
// that none of them still uses Redis when the deferred closes run.
func stopServer(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if srv.Shutdown(ctx) != nil {
		_ = srv.Close()
	}
}
