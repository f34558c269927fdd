package ratelimit_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/ratelimit"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

func serve(h http.Handler, remote string, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/x", nil)
	r.RemoteAddr = remote
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestMiddlewareHeaders(t *testing.T) {
	e := harness.New(t)
	l := newLimiter(t, e, ratelimit.Policy{
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(2)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(100)},
	})
	m := ratelimit.Middleware(l, ratelimit.WithUnavailable(ratelimit.FailClosed))
	h := m(ok)

	w := serve(h, "192.0.2.1:1234", nil)
	require.Equal(t, 200, w.Code)
	require.Equal(t, "ok", w.Body.String())
	require.Equal(t, `"minute";q=2;w=60, "hour";q=100;w=3600`, w.Header().Get("RateLimit-Policy"))
	require.Equal(t, `"minute";r=1;t=60`, w.Header().Get("RateLimit"))
	require.Equal(t, "2", w.Header().Get("X-RateLimit-Limit"))
	require.Equal(t, "1", w.Header().Get("X-RateLimit-Remaining"))
	require.Equal(t, "60", w.Header().Get("X-RateLimit-Reset"))
	require.Empty(t, w.Header().Get("Retry-After"))

	require.Equal(t, 200, serve(h, "192.0.2.1:1234", nil).Code)
	w = serve(h, "192.0.2.1:999", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, "60", w.Header().Get("Retry-After"))
	require.Equal(t, `"minute";q=2;w=60, "hour";q=100;w=3600`, w.Header().Get("RateLimit-Policy"))
	require.Equal(t, `"minute";r=0;t=60`, w.Header().Get("RateLimit"))
	require.Equal(t, "2", w.Header().Get("X-RateLimit-Limit"))
	require.Equal(t, "0", w.Header().Get("X-RateLimit-Remaining"))
	require.Equal(t, "60", w.Header().Get("X-RateLimit-Reset"))
	require.Equal(t, "rate limit exceeded, retry in 60s\n", w.Body.String())
	require.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))

	require.Equal(t, 200, serve(h, "192.0.2.2:1234", nil).Code, "another client")
}

func TestMiddlewareCustomDenyAndCost(t *testing.T) {
	e := harness.New(t)
	l := newLimiter(t, e, one(ratelimit.GCRA, ratelimit.Limit{Rate: 1, Period: time.Minute, Burst: 3}))
	m := ratelimit.Middleware(l,
		ratelimit.WithKey(ratelimit.Header("X-API-Key")),
		ratelimit.WithCost(func(*http.Request) int { return 2 }),
		ratelimit.WithUnavailable(ratelimit.FailOpen),
		ratelimit.WithDenied(func(w http.ResponseWriter, _ *http.Request, res ratelimit.Result) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":"slow down"}`)
		}),
	)
	h := m(ok)
	require.Equal(t, 200, serve(h, "192.0.2.1:1", map[string]string{"X-API-Key": "k1"}).Code)
	w := serve(h, "192.0.2.1:1", map[string]string{"X-API-Key": "k1"})
	require.Equal(t, 429, w.Code)
	require.Equal(t, `{"error":"slow down"}`, w.Body.String())
	require.Equal(t, "60", w.Header().Get("Retry-After"), "one token per minute is missing")
	require.Equal(t, `"minute";q=1;w=60`, w.Header().Get("RateLimit-Policy"), "GCRA advertises its rate, not its burst")
	require.Equal(t, `"minute";r=1;t=120`, w.Header().Get("RateLimit"))
	require.Equal(t, "3", w.Header().Get("X-RateLimit-Limit"), "the burst")
	require.Equal(t, 400, serve(h, "192.0.2.1:1", nil).Code, "no API key")
}

func TestMiddlewareUnavailable(t *testing.T) {
	e := harness.New(t)
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = dead.Close() })
	l, err := ratelimit.New(dead, one(ratelimit.FixedWindow, ratelimit.PerMinute(1)), ratelimit.WithNamespace(e.NS))
	require.NoError(t, err)

	// Set-up mistakes panic with ErrInvalid when the handlers are wired.
	for name, f := range map[string]func(){
		"nil limiter": func() { ratelimit.Middleware(nil) },
		"bad mode":    func() { ratelimit.Middleware(l, ratelimit.WithUnavailable(7)) },
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				require.ErrorIs(t, err, ratelimit.ErrInvalid, name)
			}()
			f()
		}()
	}
	// Without the option the middleware fails closed.
	require.Equal(t, 503, serve(ratelimit.Middleware(l)(ok), "192.0.2.1:1", nil).Code)

	for _, c := range []struct {
		mode ratelimit.Unavailable
		code int
	}{{ratelimit.FailOpen, 200}, {ratelimit.FailClosed, 503}} {
		var hooked atomic.Int64
		m := ratelimit.Middleware(l,
			ratelimit.WithUnavailable(c.mode),
			ratelimit.WithOnError(func(_ *http.Request, err error) {
				if err != nil && !errors.Is(err, ratelimit.ErrNoKey) {
					hooked.Add(1)
				}
			}),
		)
		w := serve(m(ok), "192.0.2.1:1", nil)
		require.Equal(t, c.code, w.Code)
		require.EqualValues(t, 1, hooked.Load())
		if c.mode == ratelimit.FailClosed {
			require.Equal(t, "1", w.Header().Get("Retry-After"))
		}
	}
}

// Every rule is listed in RateLimit-Policy, GCRA with its rate per period;
// RateLimit, X-RateLimit-* follow the binding rule.
func TestMiddlewarePolicyListsEveryRule(t *testing.T) {
	e := harness.New(t)
	l := newLimiter(t, e, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 60, Period: time.Minute, Burst: 10}},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(1000)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(10000)},
	})
	m := ratelimit.Middleware(l,
		ratelimit.WithKey(ratelimit.Header("X-API-Key")),
		ratelimit.WithUnavailable(ratelimit.FailOpen),
	)
	w := serve(m(ok), "192.0.2.1:1", map[string]string{"X-API-Key": "k"})
	require.Equal(t, 200, w.Code)
	require.Equal(t, []string{`"minute";q=60;w=60, "hour";q=1000;w=3600, "day";q=10000;w=86400`}, w.Header().Values("RateLimit-Policy"))
	require.Equal(t, []string{`"minute";r=9;t=1`}, w.Header().Values("RateLimit"))
	require.Equal(t, "10", w.Header().Get("X-RateLimit-Limit"))
	require.Equal(t, "9", w.Header().Get("X-RateLimit-Remaining"))
	require.Equal(t, "1", w.Header().Get("X-RateLimit-Reset"))

	// Two rules with one window are told apart by algorithm.
	l = newLimiter(t, e, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 120, Period: time.Minute, Burst: 5}},
		{Algorithm: ratelimit.SlidingCounter, Limit: ratelimit.PerMinute(100)},
		{Algorithm: ratelimit.Sliding, Limit: ratelimit.Limit{Rate: 7, Period: 1500 * time.Millisecond}},
	})
	m = ratelimit.Middleware(l, ratelimit.WithUnavailable(ratelimit.FailOpen))
	w = serve(m(ok), "192.0.2.1:1", nil)
	require.Equal(t, 200, w.Code)
	require.Equal(t, `"gcra-minute";q=120;w=60, "swc-minute";q=100;w=60, "1500ms";q=7;w=2`, w.Header().Get("RateLimit-Policy"))
	require.Equal(t, `"gcra-minute";r=4;t=1`, w.Header().Get("RateLimit"))
}

// With runtime config, the binding rule's quota is the identifier's.
func TestMiddlewarePolicyRuntimeConfig(t *testing.T) {
	e := harness.New(t)
	l := newLimiter(t, e, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 60, Period: time.Minute, Burst: 10}},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(10000)},
	}, ratelimit.WithRuntimeConfig())
	require.NoError(t, l.SetConfig(e.Ctx(), "trial", ratelimit.Config{PerDay: 3}))
	key := func(*http.Request) (string, error) { return "trial", nil }
	m := ratelimit.Middleware(l, ratelimit.WithKey(key), ratelimit.WithUnavailable(ratelimit.FailOpen))
	w := serve(m(ok), "192.0.2.1:1", nil)
	require.Equal(t, 200, w.Code)
	require.Equal(t, `"minute";q=60;w=60, "day";q=3;w=86400`, w.Header().Get("RateLimit-Policy"))
	require.Equal(t, `"day";r=2;t=86400`, w.Header().Get("RateLimit"))
	require.Equal(t, "3", w.Header().Get("X-RateLimit-Limit"))
}

// Retry-After and the reset fields are whole seconds rounded up, and
// Retry-After is never 0 while a request is refused.
func TestMiddlewareRetryAfterRoundsUp(t *testing.T) {
	e := harness.New(t)
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.Limit{Rate: 1, Period: 1001 * time.Millisecond}))
	var last ratelimit.Result
	m := ratelimit.Middleware(l,
		ratelimit.WithUnavailable(ratelimit.FailClosed),
		ratelimit.WithDenied(func(w http.ResponseWriter, _ *http.Request, res ratelimit.Result) {
			last = res
			w.WriteHeader(http.StatusTooManyRequests)
		}),
	)
	h := m(ok)
	require.Equal(t, 200, serve(h, "192.0.2.1:1", nil).Code)
	w := serve(h, "192.0.2.1:1", nil)
	require.Equal(t, 429, w.Code)
	ceil := func(d time.Duration) string { return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10) }
	require.Equal(t, ceil(last.RetryAfter), w.Header().Get("Retry-After"))
	require.Equal(t, ceil(last.ResetAfter), w.Header().Get("X-RateLimit-Reset"))
	require.Equal(t, `"1001ms";q=1;w=2`, w.Header().Get("RateLimit-Policy"))
	if e.Mini == nil {
		return // server time moves on its own: the exact values below need miniredis
	}
	require.Equal(t, 1001*time.Millisecond, last.RetryAfter)
	require.Equal(t, "2", w.Header().Get("Retry-After"), "1.001s rounds up")
	require.Equal(t, `"1001ms";r=0;t=2`, w.Header().Get("RateLimit"))

	e.Advance(1000 * time.Millisecond)
	w = serve(h, "192.0.2.1:1", nil)
	require.Equal(t, 429, w.Code)
	require.Equal(t, time.Millisecond, last.RetryAfter)
	require.Equal(t, "1", w.Header().Get("Retry-After"), "1ms left is 1s, never 0")
	require.Equal(t, "1", w.Header().Get("X-RateLimit-Reset"))

	// The default body rounds the same way.
	m = ratelimit.Middleware(l, ratelimit.WithUnavailable(ratelimit.FailClosed))
	w = serve(m(ok), "192.0.2.1:1", nil)
	require.Equal(t, 429, w.Code)
	require.Equal(t, "rate limit exceeded, retry in 1s\n", w.Body.String())
}

// A KeyFunc returning ("", nil) or an error gets 400, OnError sees the
// error, and the limiter is not called (nothing is written).
func TestMiddlewareNoKey(t *testing.T) {
	e := harness.New(t)
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(5)))
	custom := errors.New("custom key failure")
	for _, c := range []struct {
		name string
		key  ratelimit.KeyFunc
		want error
	}{
		{"empty identifier", func(*http.Request) (string, error) { return "", nil }, ratelimit.ErrNoKey},
		{"key error", func(*http.Request) (string, error) { return "", custom }, custom},
		{"missing header", ratelimit.Header("X-API-Key"), ratelimit.ErrNoKey},
		{"unparsable peer", ratelimit.ClientIP(), ratelimit.ErrNoKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []error
			var served atomic.Int64
			m := ratelimit.Middleware(l,
				ratelimit.WithKey(c.key),
				ratelimit.WithUnavailable(ratelimit.FailOpen),
				ratelimit.WithOnError(func(_ *http.Request, err error) { got = append(got, err) }),
			)
			w := serve(m(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) })), "pipe", nil)
			require.Equal(t, http.StatusBadRequest, w.Code)
			require.Zero(t, served.Load(), "next must not run")
			require.Empty(t, w.Header().Get("RateLimit"))
			require.Len(t, got, 1)
			require.ErrorIs(t, got[0], c.want)
			require.Empty(t, e.Keys(), "the limiter must not run")
		})
	}
}

// A bad cost is a 400 the hook sees; nothing is consumed.
func TestMiddlewareBadCost(t *testing.T) {
	e := harness.New(t)
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(5)))
	for _, cost := range []int{0, -1, 6} {
		var got error
		m := ratelimit.Middleware(l,
			ratelimit.WithCost(func(*http.Request) int { return cost }),
			ratelimit.WithUnavailable(ratelimit.FailOpen),
			ratelimit.WithOnError(func(_ *http.Request, err error) { got = err }),
		)
		w := serve(m(ok), "192.0.2.1:1", nil)
		require.Equal(t, http.StatusBadRequest, w.Code, "cost %d", cost)
		require.ErrorIs(t, got, ratelimit.ErrInvalid)
	}
	require.Empty(t, e.Keys())
}

// Header's secret never reaches Redis keys or the errors the hook sees.
func TestMiddlewareHeaderKeepsSecrets(t *testing.T) {
	const secret = "sk_live_do_not_log_me"
	e := harness.New(t)
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(1)))
	m := ratelimit.Middleware(l,
		ratelimit.WithKey(ratelimit.Header("X-API-Key")),
		ratelimit.WithUnavailable(ratelimit.FailClosed),
	)
	require.Equal(t, 200, serve(m(ok), "192.0.2.1:1", map[string]string{"X-API-Key": secret}).Code)
	require.Equal(t, 429, serve(m(ok), "192.0.2.1:1", map[string]string{"X-API-Key": secret}).Code)
	ks := e.Keys()
	require.NotEmpty(t, ks)
	for _, k := range ks {
		require.NotContains(t, k, secret)
		require.Contains(t, k, ratelimit.HashID(secret))
	}
	res, err := l.Peek(e.Ctx(), ratelimit.HashID(secret))
	require.NoError(t, err)
	require.Zero(t, res.Remaining, "HashID reaches the same state")

	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = dead.Close() })
	dl, err := ratelimit.New(dead, one(ratelimit.FixedWindow, ratelimit.PerMinute(1)), ratelimit.WithNamespace(e.NS))
	require.NoError(t, err)
	var got error
	m = ratelimit.Middleware(dl,
		ratelimit.WithKey(ratelimit.Header("X-API-Key")),
		ratelimit.WithUnavailable(ratelimit.FailClosed),
		ratelimit.WithOnError(func(_ *http.Request, err error) { got = err }),
	)
	require.Equal(t, 503, serve(m(ok), "192.0.2.1:1", map[string]string{"X-API-Key": secret}).Code)
	require.Error(t, got)
	require.NotContains(t, got.Error(), secret)
}

// IPv6 clients rotating addresses inside their /64 share one budget.
func TestMiddlewareIPv6Rotation(t *testing.T) {
	e := harness.New(t)
	l := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerMinute(3)))
	m := ratelimit.Middleware(l, ratelimit.WithUnavailable(ratelimit.FailClosed))
	h := m(ok)
	codes := []int{}
	for i := 1; i <= 5; i++ {
		codes = append(codes, serve(h, "[2001:db8:aa:bb::"+strconv.Itoa(i)+"]:443", nil).Code)
	}
	require.Equal(t, []int{200, 200, 200, 429, 429}, codes)
	require.Equal(t, 200, serve(h, "[2001:db8:aa:bc::1]:443", nil).Code, "another /64")
}

// The handler behind the middleware, and the denied function, see the
// decision in the request's context: Shadowed for a request that shadow
// mode admits although the policy refuses it, Local for a refusal the deny
// cache answered without Redis.
func TestMiddlewareResultInContext(t *testing.T) {
	e := harness.New(t)
	type seen struct {
		res ratelimit.Result
		ok  bool
	}
	var got []seen
	record := func(r *http.Request) {
		res, ok := ratelimit.ResultFrom(r.Context())
		got = append(got, seen{res, ok})
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { record(r) })
	denied := ratelimit.WithDenied(func(w http.ResponseWriter, r *http.Request, res ratelimit.Result) {
		record(r)
		w.WriteHeader(http.StatusTooManyRequests)
	})

	// Shadow mode: the third request is served, marked Shadowed.
	shadow := newLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(2)), ratelimit.WithShadow())
	h := ratelimit.Middleware(shadow, denied)(next)
	for range 3 {
		require.Equal(t, 200, serve(h, "192.0.2.1:1", nil).Code)
	}
	require.Len(t, got, 3)
	for i, s := range got {
		require.True(t, s.ok, i)
		require.True(t, s.res.Allowed, i)
		require.Equal(t, i == 2, s.res.Shadowed, i)
		require.False(t, s.res.Local, i)
	}
	require.Equal(t, "0", serve(h, "192.0.2.1:1", nil).Header().Get("X-RateLimit-Remaining"), "headers tell the refusal not enforced")

	// The deny cache: once refused, the client is refused locally.
	got = nil
	cached, _ := denyLimiter(t, e, one(ratelimit.FixedWindow, ratelimit.PerHour(1)))
	h = ratelimit.Middleware(cached, denied)(next)
	require.Equal(t, 200, serve(h, "192.0.2.2:1", nil).Code)
	harness.WaitFor(t, "a refusal from the deny cache", func() bool {
		require.Equal(t, 429, serve(h, "192.0.2.2:1", nil).Code)
		return got[len(got)-1].res.Local
	})
	require.True(t, got[0].ok && got[0].res.Allowed && !got[0].res.Local)
	for _, s := range got[1:] {
		require.True(t, s.ok)
		require.False(t, s.res.Allowed)
		require.False(t, s.res.Shadowed)
	}

	_, ok := ratelimit.ResultFrom(httptest.NewRequest("GET", "/", nil).Context())
	require.False(t, ok, "no decision outside the middleware")
}
