package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/ratelimit"
)

func connect() (*redis.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	m.SetTime(time.Date(2025, 6, 27, 12, 0, 0, 0, time.UTC))
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	return c, func() { _ = c.Close(); m.Close() }
}

// A GCRA limit: 10 requests per second, at most 5 at once.
func Example() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	l, err := ratelimit.New(rdb, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 5}},
	})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 6; i++ {
		res, err := l.Allow(ctx, "user:42")
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry=%v\n", res.Allowed, res.Remaining, res.RetryAfter)
	}
	// Output:
	// allowed=true remaining=4 retry=0s
	// allowed=true remaining=3 retry=0s
	// allowed=true remaining=2 retry=0s
	// allowed=true remaining=1 retry=0s
	// allowed=true remaining=0 retry=0s
	// allowed=false remaining=0 retry=100ms
}

// Per-API-key limits: 60 per minute with bursts of 10, 1000 per hour,
// 10000 per day, all checked and consumed together, with per-key overrides
// read from ratelimit:config:{api_key_id} in the same script.
func ExamplePolicy() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	l, err := ratelimit.New(rdb, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 60, Period: time.Minute, Burst: 10}},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(1000)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(10000)},
	}, ratelimit.WithRuntimeConfig(), ratelimit.WithNamespace(keys.Namespace{Prefix: "zentoria:"}))
	if err != nil {
		panic(err)
	}
	// A trial key: 3 requests per day.
	if err := l.SetConfig(ctx, "trial-key", ratelimit.Config{PerDay: 3}); err != nil {
		panic(err)
	}
	for _, key := range []string{"paid-key", "trial-key"} {
		n := 0
		for i := 0; i < 20; i++ {
			res, err := l.Allow(ctx, key)
			if err != nil {
				panic(err)
			}
			if res.Allowed {
				n++
			}
		}
		fmt.Printf("%s: %d of 20 admitted\n", key, n)
	}
	// Output:
	// paid-key: 10 of 20 admitted
	// trial-key: 3 of 20 admitted
}

// A cost above what the limit can ever admit is refused with RetryAfter
// Never (no wait helps); an empty identifier is an error. Neither writes
// anything.
func ExampleLimiter_AllowN() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(100)}})
	if err != nil {
		panic(err)
	}
	res, err := l.AllowN(ctx, "tenant-7", 40)
	fmt.Println(res.Allowed, res.Remaining, err)
	res, err = l.AllowN(ctx, "tenant-7", 101)
	fmt.Println(res.Allowed, res.RetryAfter == ratelimit.Never, res.Remaining, err)
	_, err = l.Allow(ctx, "")
	fmt.Println(errors.Is(err, keys.ErrInvalid))
	// Output:
	// true 60 <nil>
	// false true 60 <nil>
	// true
}

// AllowAtMost takes what the limit has left, up to n: a batch job sends
// what it may now and keeps the rest for later.
func ExampleLimiter_AllowAtMost() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(100)}})
	if err != nil {
		panic(err)
	}
	for _, batch := range []int{70, 70, 70} {
		n, res, err := l.AllowAtMost(ctx, "mailer", batch)
		if err != nil {
			panic(err)
		}
		fmt.Println(n, "of", batch, "sent; allowed:", res.Allowed, "left:", res.Remaining)
	}
	// Output:
	// 70 of 70 sent; allowed: true left: 30
	// 30 of 70 sent; allowed: true left: 0
	// 0 of 70 sent; allowed: false left: 0
}

// Blocking an identifier refuses it in every limiter of the namespace.
func ExampleLimiter_Block() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(100)}})
	if err != nil {
		panic(err)
	}
	if err := l.Block(ctx, "203.0.113.9", 15*time.Minute); err != nil {
		panic(err)
	}
	res, _ := l.Allow(ctx, "203.0.113.9")
	fmt.Println(res.Allowed, res.RetryAfter)
	_ = l.Reset(ctx, "203.0.113.9")
	res, _ = l.Allow(ctx, "203.0.113.9")
	fmt.Println(res.Allowed)
	// Output:
	// false 15m0s
	// true
}

// Unblock lifts a block early and keeps the counters: the requests made
// before the block still count.
func ExampleLimiter_Unblock() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(3)}})
	if err != nil {
		panic(err)
	}
	_, _ = l.AllowN(ctx, "203.0.113.9", 2)
	_ = l.Block(ctx, "203.0.113.9", 15*time.Minute)
	lifted, _ := l.Unblock(ctx, "203.0.113.9")
	res, _ := l.Allow(ctx, "203.0.113.9")
	fmt.Println(lifted, res.Allowed, res.Remaining)
	// Output:
	// true true 0
}

// The handler behind the middleware reads the decision from the request's
// context: a request admitted in shadow mode that enforcement would refuse
// is marked Shadowed.
func ExampleResultFrom() {
	rdb, stop := connect()
	defer stop()

	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(1)}}, ratelimit.WithShadow())
	if err != nil {
		panic(err)
	}
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, _ := ratelimit.ResultFrom(r.Context())
		fmt.Println("served; would deny:", res.Shadowed, "decided locally:", res.Local)
	}))
	for range 2 {
		r := httptest.NewRequest("GET", "/", nil)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	// Output:
	// served; would deny: false decided locally: false
	// served; would deny: true decided locally: false
}

// Five login attempts per IP per 15 minutes, exact (sliding log), failing
// closed: if Redis is down, logins are refused rather than unlimited.
func ExampleMiddleware() {
	rdb, stop := connect()
	defer stop()

	l, err := ratelimit.New(rdb, ratelimit.Policy{
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.Limit{Rate: 5, Period: 15 * time.Minute}},
	}, ratelimit.WithEndpoint("POST /login"))
	if err != nil {
		panic(err)
	}
	m := ratelimit.Middleware(l,
		ratelimit.WithKey(ratelimit.ClientIP()),
		ratelimit.WithUnavailable(ratelimit.FailClosed),
	)
	h := m(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for i := 0; i < 6; i++ {
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = "198.51.100.4:40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d %s retry-after=%q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
	}
	// Output:
	// 204 "15m";r=4;t=900 retry-after=""
	// 204 "15m";r=3;t=900 retry-after=""
	// 204 "15m";r=2;t=900 retry-after=""
	// 204 "15m";r=1;t=900 retry-after=""
	// 204 "15m";r=0;t=900 retry-after=""
	// 429 "15m";r=0;t=900 retry-after="900"
}

// Wait blocks until the request fits (here a few milliseconds), or gives
// up at once when the context's deadline comes first.
func ExampleLimiter_Wait() {
	m, err := miniredis.Run() // its clock runs: Wait needs time to pass
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	l, err := ratelimit.New(rdb, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 100, Period: time.Second, Burst: 1}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := l.Wait(ctx, "job-runner", 1); err != nil {
			panic(err)
		}
	}
	fmt.Println("3 jobs started")

	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	slow, _ := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(1)}})
	_, _ = slow.Allow(ctx, "report")
	_, err = slow.Wait(short, "report", 1)
	fmt.Println(errors.Is(err, ratelimit.ErrLimited), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// 3 jobs started
	// true true
}

// Reserve counts a request that may turn out not to count: Cancel gives
// its units back; Penalize makes a failed login weigh five requests.
func ExampleLimiter_Reserve() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(10)}})
	if err != nil {
		panic(err)
	}
	r, err := l.Reserve(ctx, "ip:192.0.2.1", 1)
	if err != nil {
		panic(err)
	}
	fmt.Println("reserved:", r.Allowed, "remaining:", r.Remaining)
	// the upstream call failed: the request should not count
	if err := r.Cancel(ctx); err != nil {
		panic(err)
	}
	// a failed login weighs 5
	if err := l.Penalize(ctx, "ip:192.0.2.1", 5); err != nil {
		panic(err)
	}
	res, _ := l.Peek(ctx, "ip:192.0.2.1")
	fmt.Println("remaining:", res.Remaining)
	// Output:
	// reserved: true remaining: 9
	// remaining: 5
}

// Shadow mode tries a policy on live traffic: nothing is refused, and the
// decision hook counts what would have been.
func ExampleWithShadow() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	var wouldDeny int
	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(3)}},
		ratelimit.WithShadow(),
		ratelimit.WithDecisionHook(func(_ context.Context, _ string, _ int, res ratelimit.Result, err error) {
			if err == nil && res.Shadowed {
				wouldDeny++
			}
		}))
	if err != nil {
		panic(err)
	}
	served := 0
	for i := 0; i < 5; i++ {
		if res, err := l.Allow(ctx, "user:7"); err == nil && res.Allowed {
			served++
		}
	}
	fmt.Println("served:", served, "would deny:", wouldDeny)
	// Output:
	// served: 5 would deny: 2
}

// After three refusals within a minute the client is blocked for an hour.
func ExampleWithAutoBlock() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(1)}},
		ratelimit.WithAutoBlock(3, time.Minute, time.Hour))
	if err != nil {
		panic(err)
	}
	for i := 0; i < 4; i++ {
		res, _ := l.Allow(ctx, "ip:198.51.100.9")
		fmt.Println(res.Allowed, res.RetryAfter)
	}
	// Output:
	// true 0s
	// false 1m0s
	// false 1m0s
	// false 1h0m0s
}

// The deny cache refuses a flooding client in process until its
// RetryAfter, and a Reset from any instance lets it in again at once.
func ExampleWithDenyCache() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	p := ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(2)}}
	l, err := ratelimit.New(rdb, p, ratelimit.WithDenyCache(time.Minute))
	if err != nil {
		panic(err)
	}
	defer l.Close()
	other, _ := ratelimit.New(rdb, p) // another instance
	local := 0
	for i := 0; i < 1000; i++ {
		res, err := l.Allow(ctx, "flooder")
		if err != nil {
			panic(err)
		}
		if res.Local {
			local++
		}
		if i == 10 {
			time.Sleep(50 * time.Millisecond) // the first refusal subscribes
		}
	}
	fmt.Println("most refusals were local:", local > 900)
	if err := other.Reset(ctx, "flooder"); err != nil {
		panic(err)
	}
	for {
		if res, _ := l.Allow(ctx, "flooder"); res.Allowed {
			break // at once: when the Reset's message arrives
		}
	}
	fmt.Println("admitted after the reset")
	// Output:
	// most refusals were local: true
	// admitted after the reset
}

// When Redis goes away the limiter keeps deciding in process, at the
// policy's rate divided by the live instances, and says when it switches.
func ExampleWithDegradedMode() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	defer rdb.Close()
	changed := make(chan bool, 2)
	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(3)}},
		ratelimit.WithDegradedMode(func(degraded bool) { changed <- degraded }))
	if err != nil {
		panic(err)
	}
	defer l.Close()
	ctx := context.Background()

	m.Close() // Redis goes away
	for i := 0; i < 4; i++ {
		res, err := l.Allow(ctx, "user:1")
		fmt.Println(res.Allowed, res.Local, err)
	}
	fmt.Println("degraded:", <-changed)
	if err := m.Restart(); err != nil { // and comes back (empty)
		panic(err)
	}
	fmt.Println("degraded:", <-changed)
	res, _ := l.Allow(ctx, "user:1")
	fmt.Println(res.Allowed, res.Local)
	// Output:
	// true true <nil>
	// true true <nil>
	// true true <nil>
	// false true <nil>
	// degraded: true
	// degraded: false
	// true false
}

// An admin tool lists the blocks and the API keys with a runtime config.
func ExampleNewInspector() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	l, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(100)}},
		ratelimit.WithRuntimeConfig())
	if err != nil {
		panic(err)
	}
	_ = l.Block(ctx, "203.0.113.9", 15*time.Minute)
	_ = l.SetConfig(ctx, "key-1", ratelimit.Config{PerMinute: 10})

	in, err := ratelimit.NewInspector(rdb) // New's options, policy aside
	if err != nil {
		panic(err)
	}
	o, err := in.Overview(ctx, 100) // two round trips per node
	if err != nil {
		panic(err)
	}
	for _, b := range o.Blocks {
		fmt.Println("blocked:", b.ID, "for", b.Remaining)
	}
	fmt.Println("configured:", o.Configured)
	// Output:
	// blocked: 203.0.113.9 for 15m0s
	// configured: [key-1]
}
