// Command ratelimit-http serves two rate-limited routes:
//
//	GET  /api/hello  for API clients: the X-API-Key header is checked first
//	                 (401 for an unknown key, before the limiter runs), then
//	                 the request is limited by the key's ID: 60/minute with
//	                 bursts of 10, 1000/hour, 10000/day (seed 001), per-key
//	                 overrides from ratelimit:config:{key_id}; fails open.
//	POST /login      keyed by client IP (IPv6 by /64): 5 attempts per 15
//	                 minutes, exact (sliding log); fails closed.
//
// Two demo API keys exist: sk_demo_trial (ID "trial", configured at start-up
// to 3 requests per day) and sk_demo_acme (ID "acme", the default limits).
//
//	go run ./examples/ratelimit-http                # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/5 go run ./examples/ratelimit-http
//	curl -i -H 'X-API-Key: sk_demo_trial' http://127.0.0.1:8080/api/hello
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/ratelimit"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	rdb, closeRedis, err := connect.FromEnv(context.Background(), os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	api, err := ratelimit.New(rdb, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 60, Period: time.Minute, Burst: 10}},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(1000)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(10000)},
	}, ratelimit.WithRuntimeConfig())
	if err != nil {
		return err
	}
	if err := api.SetConfig(ctx, "trial", ratelimit.Config{PerDay: 3}); err != nil {
		return err
	}
	login, err := ratelimit.New(rdb, ratelimit.Policy{
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.Limit{Rate: 5, Period: 15 * time.Minute}},
	}, ratelimit.WithEndpoint("POST /login"))
	if err != nil {
		return err
	}

	logErr := func(r *http.Request, err error) { log.Printf("ratelimit %s %s: %v", r.Method, r.URL.Path, err) }
	// The API limiter fails open, so it must never see a key the client made
	// up: authenticate first and limit by the verified key's ID, never by
	// the secret (a fresh made-up value per request would be a fresh budget).
	apiMW := ratelimit.Middleware(api,
		ratelimit.WithKey(keyIDFromContext),
		ratelimit.WithUnavailable(ratelimit.FailOpen),
		ratelimit.WithOnError(logErr),
	)
	loginMW := ratelimit.Middleware(login,
		ratelimit.WithKey(ratelimit.ClientIP()), // add trusted proxy prefixes when behind one
		// FailClosed is the default: while Redis is down, logins get 503.
		ratelimit.WithOnError(logErr),
		ratelimit.WithDenied(func(w http.ResponseWriter, _ *http.Request, res ratelimit.Result) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			secs := max(1, (res.RetryAfter+time.Second-1)/time.Second) // whole seconds, rounded up
			fmt.Fprintf(w, `{"error":"too many login attempts","retry_after_seconds":%d}`+"\n", int64(secs))
		}),
	)

	mux := http.NewServeMux()
	mux.Handle("GET /api/hello", authenticate(apiMW(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := keyIDFromContext(r)
		fmt.Fprintf(w, "hello, %s\n", id)
	}))))
	mux.Handle("POST /login", loginMW(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "wrong password", http.StatusUnauthorized)
	})))

	srv := &http.Server{Addr: connect.HTTPAddr(), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Printf("listening on http://%s  (try: curl -i -H 'X-API-Key: sk_demo_trial' http://%s/api/hello)\n", srv.Addr, srv.Addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Println("stopped")
	return nil
}

// apiKeys maps ratelimit.HashID(secret) to the key's ID, as a real server
// would keep only hashes of its API keys.
var apiKeys = map[string]string{
	ratelimit.HashID("sk_demo_trial"): "trial",
	ratelimit.HashID("sk_demo_acme"):  "acme",
}

type keyIDCtx struct{}

// authenticate answers 401 unless X-API-Key holds a known key, and passes
// the key's ID on in the request context.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := apiKeys[ratelimit.HashID(strings.TrimSpace(r.Header.Get("X-API-Key")))]
		if !ok {
			w.Header().Set("WWW-Authenticate", `APIKey realm="api"`)
			http.Error(w, "unknown or missing API key", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyIDCtx{}, id)))
	})
}

// keyIDFromContext is the API limiter's KeyFunc: the ID authenticate
// verified.
func keyIDFromContext(r *http.Request) (string, error) {
	id, _ := r.Context().Value(keyIDCtx{}).(string)
	if id == "" {
		return "", fmt.Errorf("%w: request not authenticated", ratelimit.ErrNoKey)
	}
	return id, nil
}
