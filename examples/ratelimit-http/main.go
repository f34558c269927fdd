// Command ratelimit-http serves two rate-limited routes:
//
//	GET  /api/hello  keyed by the X-API-Key header: 60/minute with bursts
//	                 of 10, 1000/hour, 10000/day (seed 001), per-key
//	                 overrides from ratelimit:config:{key}; fails open.
//	POST /login      keyed by client IP: 5 attempts per 15 minutes, exact
//	                 (sliding log); fails closed.
//
// The key "trial" is configured at start-up to 3 requests per day.
//
//	go run ./examples/ratelimit-http                # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/5 go run ./examples/ratelimit-http
//	curl -i -H 'X-API-Key: trial' http://127.0.0.1:8080/api/hello
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/redschema/redschema/internal/demo"
	"github.com/redschema/redschema/ratelimit"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	rdb, closeRedis, err := demo.Connect(os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()
	ctx, stop := demo.SignalContext()
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
	apiMW, err := ratelimit.NewMiddleware(api, ratelimit.MiddlewareOptions{
		Key:         ratelimit.Header("X-API-Key"),
		Unavailable: ratelimit.FailOpen,
		OnError:     logErr,
	})
	if err != nil {
		return err
	}
	loginMW, err := ratelimit.NewMiddleware(login, ratelimit.MiddlewareOptions{
		Key:         ratelimit.ClientIP(), // add trusted proxy prefixes when behind one
		Unavailable: ratelimit.FailClosed,
		OnError:     logErr,
		Denied: func(w http.ResponseWriter, _ *http.Request, res ratelimit.Result) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, `{"error":"too many login attempts","retry_after_seconds":%d}`+"\n", int(res.RetryAfter.Seconds()+0.999))
		},
	})
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("GET /api/hello", apiMW.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s\n", r.Header.Get("X-API-Key"))
	})))
	mux.Handle("POST /login", loginMW.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "wrong password", http.StatusUnauthorized)
	})))

	srv := &http.Server{Addr: demo.Addr(), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Printf("listening on http://%s  (try: curl -i -H 'X-API-Key: trial' http://%s/api/hello)\n", srv.Addr, srv.Addr)
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
