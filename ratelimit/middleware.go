package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/internal/route"
)

// Unavailable says what the middleware does with a request when the limiter
// cannot decide (Redis unreachable, a timeout, corrupt state).
type Unavailable uint8

const (
	// FailClosed answers 503 Service Unavailable: the default. Safety
	// first: limits that guard against abuse (login attempts, paid quotas)
	// hold, but an outage of Redis makes the routes behind the middleware
	// unavailable.
	FailClosed Unavailable = iota
	// FailOpen serves the request unlimited. Availability first: an outage
	// of Redis does not take the service down, but while it lasts nothing
	// is limited, which is what a brute-force or scraping client wants.
	// Right for limits that protect capacity or fairness.
	FailOpen
)

// MiddlewareOption configures Middleware. Options only record; Middleware
// checks them.
type MiddlewareOption func(*middlewareOptions)

type middlewareOptions struct {
	key         KeyFunc
	cost        func(r *http.Request) int
	unavailable Unavailable
	onError     func(r *http.Request, err error)
	denied      func(w http.ResponseWriter, r *http.Request, res Result)
}

// WithKey sets how a request's identifier is found. The default (and a
// nil f) is ClientIP() with no trusted proxies. A key error, or an empty
// identifier with a nil error, is passed to the error hook (the latter
// wrapping ErrNoKey) and answered with 400 Bad Request; the limiter is not
// called. To answer 401 for unknown API keys, authenticate in a handler in
// front of the middleware.
//
// Default: ClientIP() with no trusted proxies.
func WithKey(f KeyFunc) MiddlewareOption { return func(o *middlewareOptions) { o.key = f } }

// WithCost sets the cost of a request; the default (and a nil f) is 1. A
// cost the policy can never admit is answered with 400 Bad Request.
//
// Default: 1 per request.
func WithCost(f func(r *http.Request) int) MiddlewareOption {
	return func(o *middlewareOptions) { o.cost = f }
}

// WithUnavailable sets what happens to a request when the limiter cannot
// decide: FailClosed (the default: 503) or FailOpen (served unlimited).
//
// Default: FailClosed.
func WithUnavailable(u Unavailable) MiddlewareOption {
	return func(o *middlewareOptions) { o.unavailable = u }
}

// WithOnError sets a hook that sees every error: key errors, bad costs,
// and the limiter's errors (Redis, context, corrupt data). The default
// (and a nil f) is none.
//
// Default: none.
func WithOnError(f func(r *http.Request, err error)) MiddlewareOption {
	return func(o *middlewareOptions) { o.onError = f }
}

// WithDenied sets how a refused request is answered, after the headers
// are set. The default (and a nil f) is 429 Too Many Requests with a short
// text body.
//
// Default: 429 Too Many Requests with a short text body.
func WithDenied(f func(w http.ResponseWriter, r *http.Request, res Result)) MiddlewareOption {
	return func(o *middlewareOptions) { o.denied = f }
}

// Middleware returns net/http middleware that limits requests with l.
// Without options, requests are keyed by ClientIP(), cost 1, a refused
// request gets 429, and a request the limiter cannot decide gets 503
// (FailClosed).
//
// Every limited response carries the IETF fields of
// draft-ietf-httpapi-ratelimit-headers (08 and later): RateLimit-Policy
// lists every rule of the policy, and RateLimit reports the binding rule
// (the one with the fewest remaining requests), e.g. for 60/minute with
// bursts of 10 (GCRA) and 1000/hour:
//
//	RateLimit-Policy: "minute";q=60;w=60, "hour";q=1000;w=3600
//	RateLimit: "minute";r=9;t=6
//
// Policy names are the rule's window ("second", "minute", "hour", "day",
// else "15m", "1500ms", ...), prefixed by the algorithm ("gcra-minute")
// when two rules share a window. q is the rule's Rate (for GCRA too: the
// sustained rate, not the burst) and w its Period in seconds, rounded up
// for periods that are not whole seconds. With WithRuntimeConfig, the
// binding rule's q is the identifier's effective quota when the Result
// tells it (Limit of a rule that is not GCRA); the other rules show the
// policy's values (knowing the overrides would cost another round trip).
// In RateLimit, r is Result.Remaining and t is Result.ResetAfter in seconds,
// rounded up.
//
// The de-facto X-RateLimit-Limit (Result.Limit: the binding rule's
// capacity, the burst for GCRA), X-RateLimit-Remaining and X-RateLimit-Reset
// (seconds until full capacity, rounded up) follow the binding rule too.
// Refused requests also get Retry-After: whole seconds, rounded up, and at
// least 1. Each request costs one round trip (none when the deny cache
// answers).
//
// The handler behind the middleware, and WithDenied's function, find the
// decision in the request's context with ResultFrom: in particular
// Result.Shadowed (WithShadow: the policy would have refused the request
// that it is now serving) and Result.Local (decided in-process by the deny
// cache or degraded mode, without Redis). The headers describe the
// decision as Redis made it; in shadow mode they report the refusal that
// was not enforced (a client sees what enforcement would tell it).
//
// The handler behind the middleware gets a copy of the request (with the
// decision in its context); the pattern an http.ServeMux behind it
// matches is copied back onto the request the middleware received when
// the handler returns, so a metrics middleware outside this one still
// labels the request by its route.
//
// Middleware panics, with an error matching ErrInvalid, when l is nil or
// WithUnavailable is given a value other than FailClosed or FailOpen: both
// are mistakes in the program's set-up, found when it wires its handlers.
func Middleware(l *Limiter, opts ...MiddlewareOption) func(http.Handler) http.Handler {
	const op = "middleware"
	var o middlewareOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	switch {
	case l == nil:
		panic(pkg.Invalidf(op, "nil limiter"))
	case o.unavailable != FailClosed && o.unavailable != FailOpen:
		panic(pkg.Invalidf(op, "unavailable mode %d: want FailClosed or FailOpen", o.unavailable))
	}
	if o.key == nil {
		o.key = ClientIP()
	}
	if o.denied == nil {
		o.denied = deny
	}
	m := &middleware{l: l, o: o, policy: l.Policy()}
	count := map[string]int{}
	for _, r := range m.policy {
		count[windowName(r.Limit.Period)]++
	}
	for _, r := range m.policy {
		n := windowName(r.Limit.Period)
		if count[n] > 1 {
			n = r.Algorithm.String() + "-" + n
		}
		n = strconv.Quote(n)
		m.names = append(m.names, n)
		m.items = append(m.items, policyItem(n, r.Limit.Rate, r.Limit.Period))
	}
	m.header = strings.Join(m.items, ", ")
	return m.handler
}

// middleware is one Middleware's state.
type middleware struct {
	l      *Limiter
	o      middlewareOptions
	policy Policy
	names  []string // quoted policy names, by rule
	items  []string // RateLimit-Policy items, by rule
	header string   // RateLimit-Policy with the policy's quotas
}

// policyItem renders one RateLimit-Policy item: "name";q=quota;w=seconds.
func policyItem(name string, quota int, period time.Duration) string {
	return name + ";q=" + strconv.Itoa(quota) + ";w=" + strconv.FormatInt(seconds(period), 10)
}

// policyHeader returns RateLimit-Policy for res: the policy's quotas, with
// the binding rule's effective quota when res reports one.
func (m *middleware) policyHeader(res Result) string {
	if res.Rule < 0 || res.Rule >= len(m.policy) {
		return m.header
	}
	r := m.policy[res.Rule]
	if r.Algorithm == GCRA || res.Limit == r.Limit.Rate || res.Limit <= 0 {
		return m.header
	}
	items := append([]string(nil), m.items...)
	items[res.Rule] = policyItem(m.names[res.Rule], res.Limit, r.Limit.Period)
	return strings.Join(items, ", ")
}

func deny(w http.ResponseWriter, _ *http.Request, res Result) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusTooManyRequests)
	fmt.Fprintf(w, "rate limit exceeded, retry in %ds\n", max(1, seconds(res.RetryAfter)))
}

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// handler returns next wrapped by the limiter.
func (m *middleware) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := m.o.key(r)
		if err == nil && id == "" {
			err = fmt.Errorf("%w: empty identifier", ErrNoKey)
		}
		if err != nil {
			m.fail(w, r, err, http.StatusBadRequest)
			return
		}
		cost := 1
		if m.o.cost != nil {
			cost = m.o.cost(r)
		}
		res, err := m.l.AllowN(r.Context(), id, cost)
		switch {
		case errors.Is(err, ErrInvalid):
			m.fail(w, r, err, http.StatusBadRequest)
			return
		case err == nil && !res.Allowed && res.RetryAfter == Never:
			// A cost the policy can never admit: no Retry-After helps.
			m.fail(w, r, fmt.Errorf("%w: cost %d is above what the policy can ever admit", ErrInvalid, cost), http.StatusBadRequest)
			return
		case err != nil:
			if m.o.onError != nil {
				m.o.onError(r, err)
			}
			if m.o.unavailable == FailOpen {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Retry-After", "1")
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			return
		}
		h := w.Header()
		rule := min(max(res.Rule, 0), len(m.names)-1)
		limit, remaining, reset := strconv.Itoa(res.Limit), strconv.Itoa(res.Remaining), strconv.FormatInt(seconds(res.ResetAfter), 10)
		h.Set("RateLimit-Policy", m.policyHeader(res))
		h.Set("RateLimit", m.names[rule]+";r="+remaining+";t="+reset)
		h.Set("X-RateLimit-Limit", limit)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", reset)
		inner := r.WithContext(context.WithValue(r.Context(), resultKey{}, res))
		if !res.Allowed {
			h.Set("Retry-After", strconv.FormatInt(max(1, seconds(res.RetryAfter)), 10))
			m.o.denied(w, inner, res)
			return
		}
		route.Serve(next, w, r, inner)
	})
}

// resultKey is the context key of the Middleware's decision.
type resultKey struct{}

// ResultFrom returns the decision Middleware made for the request whose
// context is ctx: the Result of its check, with Shadowed and Local telling
// a request admitted in shadow mode that the policy would refuse, and a
// decision made without Redis (deny cache, degraded mode). It reports
// false outside the middleware and for a request served without a decision
// (FailOpen while the limiter is unavailable).
func ResultFrom(ctx context.Context) (Result, bool) {
	res, ok := ctx.Value(resultKey{}).(Result)
	return res, ok
}

func (m *middleware) fail(w http.ResponseWriter, r *http.Request, err error, code int) {
	if m.o.onError != nil {
		m.o.onError(r, err)
	}
	http.Error(w, http.StatusText(code), code)
}
