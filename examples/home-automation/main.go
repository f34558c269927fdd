// Command home-automation is the backend of seed 000 (a home-assistant
// service with a support chat) on redschema, every key under "ha:" (the
// seed's REDIS_KEY_PREFIX, which sets another):
//
//   - request metrics (§1-2): the metrics middleware counts requests,
//     accepted requests, errors, current and peak connections, speed and
//     per-endpoint counters by route template, in memory, flushed once a
//     second in one pipeline;
//   - rate limits (§3): a fixed window per client IP on every /api/ route,
//     a sliding window per account on logins (ha:sliding_limit:{id}) and a
//     sliding log per user on support messages (ha:rate_limit:{id});
//   - users and sessions (§4): ha:user:{id} records with status login,
//     anonymous (may view, not write) or blocked (refused at once, even
//     with a valid session), and a session handle per device;
//   - the admin support chat (§5): admin availability, capacity-aware
//     assignment, the unread queue by priority, the message cache and the
//     admin dashboard.
//
// At start it prints what it does, drives its own HTTP API through the
// main flows (accounts, devices, a brute-forced login, a support
// conversation, a block), prints the metrics and audits its keyspace
// against the registry; then it serves until SIGINT or SIGTERM, flushes
// and audits once more.
//
//	go run ./examples/home-automation                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/home-automation
//	REDIS_URL=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 go run ./examples/home-automation
//
// Then, in another shell (admin accounts ann and bob, password "admin-demo"):
//
//	curl -s -XPOST -d '{"user_id":"ann","password":"admin-demo","device_id":"laptop"}' http://127.0.0.1:8080/api/auth/login
//	curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/api/admin/metrics
//	curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/api/admin/audit
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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, connect.HTTPAddr(), os.Stdout, nil); err != nil {
		log.Fatal(err)
	}
}

// run serves on addr until ctx ends. After the demo it sends the
// listener's address to ready, if not nil.
func run(ctx context.Context, addr string, out io.Writer, ready chan<- string) error {
	rdb, closeRedis, err := connect.FromEnv(ctx, out)
	if err != nil {
		return err
	}
	defer closeRedis()
	a, err := newApp(rdb, out)
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
	fmt.Fprintf(out, "\nserving on %s until Ctrl-C (admins ann and bob, password %q)\n", base, adminPassword)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err := <-errc:
		stopServer(srv) // its handlers may still run
		return err
	case <-ctx.Done():
	}

	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if err := a.flush(sctx); err != nil {
		return err
	}
	rep, err := a.audit(sctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stopped; final audit of %q: %d keys, %d problems\n", a.ns.Prefix, rep.Scanned, len(rep.Problems))
	for _, p := range rep.Problems {
		fmt.Fprintln(out, "  problem:", p)
	}
	return nil
}

const narrative = `
home-automation: seed 000's backend, every key under "ha:"
  metrics     every request counted by route template, flushed once a second (ha:requests:*, ha:errors:*, ha:connections:*)
  rate limits fixed window per IP on /api/ (ha:ratelimit:api:{ip}:15m), sliding window per account on login
              (ha:sliding_limit:{id}), sliding log per user on support messages (ha:rate_limit:{id})
  users       ha:user:{id} with status login | anonymous (view only) | blocked; a session per device
  support     admin availability, assignment under capacity, unread queue by priority, message cache, dashboard
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
