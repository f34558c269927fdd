// Command presence-service is seed 002's presence service on redschema:
// multi-device presence over server-sent events (SSE, plain HTTP, no
// dependency), with batch online checks.
//
//   - A device opens GET /api/stream?user=alice&device=web: that registers
//     a connection (presence:{user_id} and connections:{user_id} in one
//     script), heartbeats it every 30 s while the stream lives, streams
//     the presence changes of the users it watches (&watch=bob,carol: a
//     snapshot first, then every change) and disconnects it when the
//     stream ends. A user is online while any of their devices is.
//   - POST /api/presence/batch {"users":[...]} checks many users at once
//     (one pipeline; the seed's MGET, cluster-safe); GET
//     /api/users/{user}/presence shows one user with their devices.
//   - PUT /api/users/{user}/status and /activity set away/busy/invisible
//     and metadata.lastActivity; GET /api/online lists everyone online
//     from the online index (no KEYS); GET /api/audit audits the keyspace.
//   - A sweeper announces users whose devices all died without a goodbye.
//
// There is no authentication: the user is a query or path parameter. A
// real service takes it from its session (see examples/session-http).
//
// At start it prints what it does, drives its own API through the main
// flows (devices coming and going, a status, a batch check) with SSE
// clients, and audits its keyspace against the registry; then it serves
// until SIGINT or SIGTERM, disconnects the open streams and audits once
// more. Every key is under KEY_PREFIX (default "ps:", so that the audit
// covers this service's keys only on a shared server; set it empty for
// the seed's bare keys).
//
//	go run ./examples/presence-service                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/presence-service
//	REDIS_URL=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 go run ./examples/presence-service
//
// Then, in other shells:
//
//	curl -sN 'http://127.0.0.1:8080/api/stream?user=bob&device=desktop&watch=alice'
//	curl -sN 'http://127.0.0.1:8080/api/stream?user=alice&device=web'
//	curl -s -XPOST -d '{"users":["alice","bob","carol"]}' http://127.0.0.1:8080/api/presence/batch
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
		prefix = "ps:"
	}
	if err := run(ctx, connect.HTTPAddr(), prefix, os.Stdout, nil); err != nil {
		log.Fatal(err)
	}
}

// run serves on addr until ctx ends, with every key under prefix. After
// the demo it sends the listener's address to ready, if not nil.
func run(ctx context.Context, addr, prefix string, out io.Writer, ready chan<- string) error {
	rdb, closeRedis, err := connect.FromEnv(ctx, out)
	if err != nil {
		return err
	}
	defer closeRedis()
	s, err := newService(ctx, rdb, keys.Namespace{Prefix: prefix}, out)
	if err != nil {
		return err
	}
	defer s.close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		// Streams end when the service stops, so that Shutdown does not
		// wait for them.
		BaseContext: func(net.Listener) context.Context { return s.ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprint(out, narrative)
	fmt.Fprintf(out, "listening on %s\n\n", base)

	if err := demo(ctx, base, out); err != nil {
		s.stopStreams()
		stopServer(srv)
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(out, "\nserving on %s until Ctrl-C\n", base)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err := <-errc:
		s.stopStreams()
		stopServer(srv) // its handlers may still run
		return err
	case <-ctx.Done():
	}

	// Stop the streams (each disconnects its device), then the server.
	open := s.stopStreams()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	rep, err := s.audit(sctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stopped (%d open streams disconnected); final audit of %q: %d keys, %d problems\n", open, prefix, rep.Scanned, len(rep.Problems))
	for _, p := range rep.Problems {
		fmt.Fprintln(out, "  problem:", p)
	}
	return nil
}

const narrative = `
presence-service: seed 002's presence service over server-sent events
  devices     GET /api/stream?user=U&device=D&watch=A,B registers a connection (presence:{user_id},
              connections:{user_id}), heartbeats it every 30 s, streams A's and B's presence changes
  presence    online while any device is; "offline" with lastSeen kept 10 min after the last one leaves
  batch       POST /api/presence/batch checks many users in one pipeline (cluster-safe, no MGET)
  statuses    away, busy, invisible (online for the system, offline for others); lastActivity
  sweeper     announces users whose devices all died without a goodbye (no KEYS: an online index)
`

// stopServer shuts srv down and waits for its handlers (at most 5 s), so
// that none of them still uses Redis when the deferred closes run.
func stopServer(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if srv.Shutdown(ctx) != nil {
		_ = srv.Close()
	}
}
