// Command ai-platform is the API of seed 001 (Zentoria Personal Edition:
// files, n8n workflows, an AI assistant) on redschema, with the seed's
// database allocation:
//
//	DB 0 sessions   a session per login (per-user index), JWT access tokens and their blacklist
//	DB 1 API cache  GET responses cached per endpoint TTL, per user, invalidated by tag ("files")
//	DB 2 queues     workflow executions and file processing: workers, retries, dead letters
//	DB 3 pub/sub    the seed's seven channels (files, ai, workflow, system, audit)
//	DB 4 AI memory  conversations in a token budget, user context, RAG and response caches
//	DB 5 limits     per-API-key limits with runtime config, per-IP login limits, a sliding AI limit
//	DB 6 locks      a file or a workflow is processed by one worker at a time (fencing tokens)
//	DB 7 metrics    api_requests_total, api_latency_ms, ai_tokens_used, queue_depth, file_uploads_bytes
//
// On a Redis Cluster there are no databases: everything is in DB 0 and the
// key prefixes keep the areas apart. Every key is under KEY_PREFIX
// (default "zentoria:", so that the audit covers this service's keys only
// on a shared server; set it empty for the seed's bare keys).
//
// At start it prints what it does, drives its own HTTP API through the
// main flows (login and token revocation, cached reads, an upload and its
// processing, workflow runs with a dead letter, AI chat, API-key limits
// changed at run time), prints the metrics and the events it saw, and
// audits every database against the registry; then it serves until
// SIGINT or SIGTERM, drains the workers and audits once more.
//
//	go run ./examples/ai-platform                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/ai-platform
//	REDIS_URL=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 go run ./examples/ai-platform
//
// Then, in another shell:
//
//	curl -s -XPOST -d '{"email":"admin@zentoria.local","password":"zentoria-demo"}' http://127.0.0.1:8080/api/v1/auth/login
//	curl -s -H "Authorization: Bearer $ACCESS_TOKEN" http://127.0.0.1:8080/api/v1/files/list
//	curl -sN -H "Authorization: Bearer $ACCESS_TOKEN" http://127.0.0.1:8080/api/v1/events
//	curl -s -H "Authorization: Bearer $ACCESS_TOKEN" http://127.0.0.1:8080/api/v1/admin/audit
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
	"syscall"
	"time"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	prefix, ok := os.LookupEnv("KEY_PREFIX")
	if !ok {
		prefix = "zentoria:"
	}
	if err := run(ctx, connect.HTTPAddr(), prefix, os.Stdout, nil); err != nil {
		log.Fatal(err)
	}
}

// run serves on addr until ctx ends, with every key under prefix. After
// the demo it sends the listener's address to ready, if not nil.
func run(ctx context.Context, addr, prefix string, out io.Writer, ready chan<- string) error {
	// One client per database of seed 001's allocation (one cluster
	// client for every area on a cluster).
	url := os.Getenv("REDIS_URL")
	dbs, closeRedis, err := connect.OpenLayout(ctx, url, keys.SeedLayout())
	if err != nil {
		return err
	}
	defer closeRedis()
	fmt.Fprintf(out, "redis: %s\n", connect.Describe(url))
	p, err := newPlatform(dbs, prefix, out)
	if err != nil {
		return err
	}
	defer p.close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p.routes(), ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(p.endStreams) // event streams never go idle
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprint(out, narrative)
	fmt.Fprintf(out, "databases: %s; keys under %q\nlistening on %s\n\n", describe(dbs), prefix, base)

	if err := demo(ctx, base, out); err != nil {
		stopServer(srv)
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(out, "\nserving on %s until Ctrl-C (admin@zentoria.local, password %q)\n", base, adminPassword)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err := <-errc:
		stopServer(srv) // its handlers may still run
		return err
	case <-ctx.Done():
	}

	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	p.stopWorkers() // running jobs finish or are released; nothing is lost
	if err := p.rec.Flush(sctx); err != nil {
		return err
	}
	rep, err := p.auditKeys(sctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stopped; final audit: %s\n", rep.summary())
	for _, pr := range rep.Problems {
		fmt.Fprintln(out, "  problem:", pr)
	}
	return nil
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

const narrative = `
ai-platform: seed 001's API (files, workflows, AI assistant), one database per area
  sessions   login -> session (per-user index) + 15 min JWT; logout blacklists the JWT's jti until it expires
  cache      GET /api/v1/files/*, /workflows/list, /ai/models cached by the seed's TTLs, per user, tag "files"
  queues     workflow executions and file processing with workers, retries and a dead-letter list
  pub/sub    files:uploaded|processed, workflow:started|completed, ai:response, system:notification, audit:event
  AI memory  conversations in a token budget, user context, RAG and response caches, streamed answers
  limits     per API key (GCRA minute + hourly and daily windows, changed at run time), per IP on login
  locks      one worker per file and per workflow, with fencing tokens
  metrics    the seed's common metrics, flushed once a second
`
