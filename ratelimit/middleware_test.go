package ratelimit_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
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
	m, err := ratelimit.NewMiddleware(l, ratelimit.MiddlewareOptions{Unavailable: ratelimit.FailClosed})
	require.NoError(t, err)
	h := m.Handler(ok)

	w := serve(h, "192.0.2.1:1234", nil)
	require.Equal(t, 200, w.Code)
	require.Equal(t, "ok", w.Body.String())
	require.Equal(t, `"minute";q=2;w=60`, w.Header().Get("RateLimit-Policy"))
	require.Equal(t, `"minute";r=1;t=60`, w.Header().Get("RateLimit"))
	require.Equal(t, "2", w.Header().Get("X-RateLimit-Limit"))
	require.Equal(t, "1", w.Header().Get("X-RateLimit-Remaining"))
	require.Equal(t, "60", w.Header().Get("X-RateLimit-Reset"))
	require.Empty(t, w.Header().Get("Retry-After"))

	require.Equal(t, 200, serve(h, "192.0.2.1:1234", nil).Code)
	w = serve(h, "192.0.2.1:999", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, "60", w.Header().Get("Retry-After"))
	require.Equal(t, "0", w.Header().Get("X-RateLimit-Remaining"))
	require.Contains(t, w.Body.String(), "rate limit exceeded")

	require.Equal(t, 200, serve(h, "192.0.2.2:1234", nil).Code, "another client")
}

func TestMiddlewareCustomDenyAndCost(t *testing.T) {
	e := harness.New(t)
	l := newLimiter(t, e, one(ratelimit.GCRA, ratelimit.Limit{Rate: 1, Period: time.Minute, Burst: 3}))
	m, err := ratelimit.NewMiddleware(l, ratelimit.MiddlewareOptions{
		Key:         ratelimit.Header("X-API-Key"),
		Cost:        func(*http.Request) int { return 2 },
		Unavailable: ratelimit.FailOpen,
		Denied: func(w http.ResponseWriter, _ *http.Request, res ratelimit.Result) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":"slow down"}`)
		},
	})
	require.NoError(t, err)
	h := m.Handler(ok)
	require.Equal(t, 200, serve(h, "192.0.2.1:1", map[string]string{"X-API-Key": "k1"}).Code)
	w := serve(h, "192.0.2.1:1", map[string]string{"X-API-Key": "k1"})
	require.Equal(t, 429, w.Code)
	require.Equal(t, `{"error":"slow down"}`, w.Body.String())
	require.Equal(t, "60", w.Header().Get("Retry-After"), "one token per minute is missing")
	require.Equal(t, `"minute";q=3;w=60`, w.Header().Get("RateLimit-Policy"))
	require.Equal(t, 400, serve(h, "192.0.2.1:1", nil).Code, "no API key")
}

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	cases := []struct {
		name, remote, xff, want string
		trusted                 bool
	}{
		{"peer", "192.0.2.7:5555", "", "192.0.2.7", false},
		{"headers ignored by default", "10.0.0.1:5555", "198.51.100.1", "10.0.0.1", false},
		{"ipv6 peer", "[2001:db8::1]:443", "", "2001:db8::1", false},
		{"mapped", "[::ffff:192.0.2.9]:1", "", "192.0.2.9", false},
		{"untrusted peer's header ignored", "192.0.2.7:1", "198.51.100.1", "192.0.2.7", true},
		{"one proxy", "10.0.0.1:1", "198.51.100.1", "198.51.100.1", true},
		{"spoofed prefix", "10.0.0.1:1", "6.6.6.6, 198.51.100.1, 10.0.0.2", "198.51.100.1", true},
		{"all trusted", "::1", "10.1.1.1, 10.0.0.2", "10.1.1.1", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := ratelimit.ClientIP()
			if c.trusted {
				f = ratelimit.ClientIP(trusted...)
			}
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			if c.xff != "" {
				r.Header.Set("X-Forwarded-For", c.xff)
			}
			got, err := f(r)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.1:1"
	r.Header.Set("X-Forwarded-For", "junk")
	_, err := ratelimit.ClientIP(trusted...)(r)
	require.ErrorIs(t, err, ratelimit.ErrNoKey)
	r.RemoteAddr = "pipe"
	_, err = ratelimit.ClientIP()(r)
	require.ErrorIs(t, err, ratelimit.ErrNoKey)
}

func TestMiddlewareUnavailable(t *testing.T) {
	e := harness.New(t)
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = dead.Close() })
	l, err := ratelimit.New(dead, one(ratelimit.FixedWindow, ratelimit.PerMinute(1)), ratelimit.WithNamespace(e.NS))
	require.NoError(t, err)

	_, err = ratelimit.NewMiddleware(l, ratelimit.MiddlewareOptions{})
	require.ErrorIs(t, err, ratelimit.ErrInvalidLimit, "the failure mode must be chosen")

	for _, c := range []struct {
		mode ratelimit.Unavailable
		code int
	}{{ratelimit.FailOpen, 200}, {ratelimit.FailClosed, 503}} {
		var hooked atomic.Int64
		m, err := ratelimit.NewMiddleware(l, ratelimit.MiddlewareOptions{
			Unavailable: c.mode,
			OnError: func(_ *http.Request, err error) {
				if err != nil && !errors.Is(err, ratelimit.ErrNoKey) {
					hooked.Add(1)
				}
			},
		})
		require.NoError(t, err)
		w := serve(m.Handler(ok), "192.0.2.1:1", nil)
		require.Equal(t, c.code, w.Code)
		require.EqualValues(t, 1, hooked.Load())
	}
}
