package metrics

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"
)

// MiddlewareOption configures Middleware.
type MiddlewareOption func(*middlewareOptions)

type middlewareOptions struct {
	route        func(*http.Request) string
	mux          *http.ServeMux
	refused      func(status int) bool
	skipLoopback bool
}

// WithRoute sets how a request's route template is found, for routers
// other than http.ServeMux (whose matched pattern, r.Pattern, is the
// default). It is called after the handler ran; "" means Unmatched.
// Return templates ("/api/forum/questions/{id}"), not raw paths: each
// distinct value is a series (up to the cap, see WithMaxSeries); raw
// paths only to write the very keys of a service that does
// (WithSharedKeys), and the cap still holds.
//
// Default: r.Pattern, the http.ServeMux pattern.
func WithRoute(f func(*http.Request) string) MiddlewareOption {
	return func(o *middlewareOptions) { o.route = f }
}

// WithMux gives Middleware the http.ServeMux it wraps, to find a
// request's route when r.Pattern does not hold it: when a middleware
// between the two passed a copy of the request on (r.WithContext) and
// did not copy the pattern back, or answered without calling the mux.
// The mux then matches the request again (mux.Handler) after it was
// served, when the route is still "". The redschema middleware (ratelimit, session, cache) need
// none of this: they carry the pattern back themselves.
//
// Default: none.
func WithMux(mux *http.ServeMux) MiddlewareOption {
	return func(o *middlewareOptions) { o.mux = mux }
}

// WithRefused sets which statuses mean the service refused the request
// (left out of requests:accepted).
//
// Default: 429 and 503.
func WithRefused(f func(status int) bool) MiddlewareOption {
	return func(o *middlewareOptions) { o.refused = f }
}

// WithoutLoopback leaves requests from loopback addresses (127.0.0.0/8,
// ::1) out of requests:total, as the home-automation layout
// (docs/home-automation.md) does so that local health checks do not count.
// By default every request counts. Every other metric counts them either
// way.
//
// Default: off.
func WithoutLoopback() MiddlewareOption { return func(o *middlewareOptions) { o.skipLoopback = true } }

// Middleware records every request that goes through it with rec's HTTP
// metrics: one more current connection while it runs; then requests:total
// (unless from loopback with WithoutLoopback), requests:accepted (unless
// refused), errors:total (status >= 400), the per-endpoint counters under
// "METHOD route", api_requests_total by route, method and status, and
// api_latency_ms by route. Recording costs a few atomic adds and never a
// network call.
//
// Wrap the router (an http.ServeMux), directly or with other middleware
// in between: the route is the pattern the mux matched, read from the
// request after the handler ran. The redschema middleware (ratelimit,
// session, cache) copy that pattern back onto the request they received,
// so they may sit between this one and the mux in any order. A
// middleware of your own there that passes a copy of the request on
// (r.WithContext) must do the same (r.Pattern = copy.Pattern once next
// returns), or give Middleware the mux with WithMux; otherwise its
// requests are recorded under Unmatched.
func Middleware(rec *Recorder, opts ...MiddlewareOption) func(http.Handler) http.Handler {
	o := middlewareOptions{route: muxRoute, refused: func(s int) bool { return s == 429 || s == 503 }}
	for _, f := range opts {
		f(&o)
	}
	h := rec.HTTP()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			h.Start()
			sw := &statusWriter{ResponseWriter: w}
			defer func() {
				status := sw.status
				if status == 0 {
					status = http.StatusOK
				}
				if p := recover(); p != nil {
					if !sw.wrote {
						status = http.StatusInternalServerError
					}
					h.Done(o.request(r, status, start))
					panic(p)
				}
				h.Done(o.request(r, status, start))
			}()
			next.ServeHTTP(sw, r)
		})
	}
}

func (o *middlewareOptions) request(r *http.Request, status int, start time.Time) Request {
	route := o.route(r)
	if route == "" && o.mux != nil {
		_, p := o.mux.Handler(r)
		route = patternPath(p)
	}
	return Request{
		Method: r.Method, Route: route, Status: status, Start: start, Duration: time.Since(start),
		Local: o.skipLoopback && isLoopback(r.RemoteAddr), Refused: o.refused(status),
	}
}

// muxRoute returns the path part of the http.ServeMux pattern that
// matched r ("GET /api/users/{id}" gives "/api/users/{id}").
func muxRoute(r *http.Request) string { return patternPath(r.Pattern) }

// patternPath returns the part of an http.ServeMux pattern after its
// method.
func patternPath(p string) string {
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = strings.TrimLeft(p[i+1:], " \t")
	}
	return p
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status = code
		w.wrote = code >= 200 || code == http.StatusSwitchingProtocols
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher when the underlying writer does.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if !w.wrote {
			w.status, w.wrote = http.StatusOK, true
		}
		f.Flush()
	}
}

// Hijack implements http.Hijacker when the underlying writer does.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if hj, ok := w.ResponseWriter.(http.Hijacker); ok {
		return hj.Hijack()
	}
	return nil, nil, errors.New("metrics: response writer cannot hijack")
}
