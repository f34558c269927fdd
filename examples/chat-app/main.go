// Command chat-app is the Redis side of seed 004's chat application on
// redschema, with plain HTTP in place of Socket.IO:
//
//   - presence (§1): a device connects, heartbeats and disconnects
//     (presence:{user_id}, seed 004's {"userId","status","lastSeen"} for
//     5 minutes after the last heartbeat); a user with two devices stays
//     online when one leaves, and a new message is pushed (FCM) only to
//     recipients who are offline;
//   - typing indicators (§2): typing:{conversation_id}:{user_id} for 3 s,
//     throttled to one write per 2 s per user and conversation in Redis
//     (so across app instances), listed without KEYS;
//   - the cron jobs (§3): unread-reminder every 2 hours and cleanup-tokens
//     every 24 hours, guarded by cron:last-run:{job_name} so that, with any
//     number of app instances, each runs once per interval (a claim in one
//     script by server time, not the seed's read-compare-write);
//   - push notifications go through a job queue (queue "fcm") with retries,
//     served by a worker.
//
// Messages, unread counts and FCM tokens live in the application's
// database (here in memory), as in the seed; Redis holds what the seed
// puts there. Two app instances, app-1 and app-2, run in this process, each
// with its own scheduler, to show the guard.
//
// At start it prints what it does, drives its own HTTP API through the
// main flows and audits its keyspace against the registry; then it serves
// until SIGINT or SIGTERM (the schedulers trying their jobs every minute),
// drains the worker and audits once more. Every key is under KEY_PREFIX
// (default "chat:", so that the audit covers this service's keys only on a
// shared server; set it empty for the seed's bare keys). The last-run keys
// have no TTL, as in the seed: a second start within 2 hours finds the
// reminder already done.
//
//	go run ./examples/chat-app                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/chat-app
//	REDIS_URL=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 go run ./examples/chat-app
//
// Then, in another shell:
//
//	curl -s -XPOST -d '{"device":"web"}' http://127.0.0.1:8080/api/users/ann/connections
//	curl -s -XPOST -d '{"username":"Ann"}' http://127.0.0.1:8080/api/conversations/conv-1/typing/ann
//	curl -s -XPOST 'http://127.0.0.1:8080/api/admin/jobs/unread-reminder?instance=app-2'
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
		prefix = "chat:"
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
	a, err := newApp(rdb, keys.Namespace{Prefix: prefix}, out)
	if err != nil {
		return err
	}
	defer a.close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.routes(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprint(out, narrative)
	fmt.Fprintf(out, "listening on %s\n\n", base)

	if err := demo(ctx, base, out); err != nil {
		stopServer(srv)
		return fmt.Errorf("demo: %w", err)
	}
	a.startSchedulers(time.Minute)
	fmt.Fprintf(out, "\nserving on %s until Ctrl-C; app-1 and app-2 try both jobs every minute\n", base)
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
	a.close() // schedulers and worker stop; the worker finishes its jobs
	rep, err := a.audit(sctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stopped; final audit of %q: %d keys, %d problems\n", prefix, rep.Scanned, len(rep.Problems))
	for _, p := range rep.Problems {
		fmt.Fprintln(out, "  problem:", p)
	}
	return nil
}

const narrative = `
chat-app: seed 004's chat backend (HTTP in place of Socket.IO)
  presence    connect / heartbeat / disconnect per device: presence:{user_id} {"userId","status","lastSeen"}, 5 min TTL;
              offline recipients get a push (FCM), online ones do not
  typing      typing:{conversation_id}:{user_id} for 3 s, one write per 2 s per user (throttled in Redis), listed without KEYS
  cron        unread-reminder every 2 h, cleanup-tokens every 24 h: cron:last-run:{job_name}, claimed atomically by
              server time, so two app instances (app-1, app-2) never both run a job in one interval
  pushes      through the job queue "fcm" with retries and a worker
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
