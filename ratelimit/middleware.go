package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/redschema/redschema/keys"
)

// Unavailable says what the middleware does with a request when the limiter
// cannot decide (Redis unreachable, timeout, corrupt state). There is no
// default: the choice is a security trade-off the caller makes explicitly.
type Unavailable uint8

const (
	// FailOpen serves the request unlimited. Availability first: an outage
	// of Redis does not take the service down, but while it lasts nothing
	// is limited, which is what a brute-force or scraping client wants.
	// Right for limits that protect capacity or fairness.
	FailOpen Unavailable = iota + 1
	// FailClosed answers 503 Service Unavailable. Safety first: limits that
	// guard against abuse (login attempts, paid quotas) hold, but an outage
	// of Redis makes the routes behind the middleware unavailable.
	FailClosed
)

// MiddlewareOptions configures NewMiddleware.
type MiddlewareOptions struct {
	// Key returns the identifier of a request. Nil means ClientIP() with no
	// trusted proxies. A key error is answered with 400 Bad Request.
	Key KeyFunc
	// Cost returns the cost of a request; nil means 1. A cost the policy
	// can never admit is answered with 400 Bad Request.
	Cost func(r *http.Request) int
	// Unavailable is required: FailOpen or FailClosed.
	Unavailable Unavailable
	// OnError, if set, is called with every error: key errors, bad costs,
	// and the limiter's errors (Redis, context, corrupt data).
	OnError func(r *http.Request, err error)
	// Denied writes the response to a refused request, after the headers
	// are set. Nil means 429 Too Many Requests with a short text body.
	Denied func(w http.ResponseWriter, r *http.Request, res Result)
}

// Middleware limits HTTP requests with a Limiter. Create it with
// NewMiddleware and wrap handlers with Handler.
//
// Every limited response carries the IETF headers (draft-ietf-httpapi-
// ratelimit-headers) for the binding rule, e.g.
//
//	RateLimit-Policy: "minute";q=60;w=60
//	RateLimit: "minute";r=59;t=60
//
// and the de-facto X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset (seconds until reset, rounded up). Refused requests also
// get Retry-After (seconds, rounded up). Each request costs one round trip.
type Middleware struct {
	l     *Limiter
	o     MiddlewareOptions
	names []string
}

// NewMiddleware returns a Middleware for l. It fails with ErrInvalidLimit
// when l is nil or o.Unavailable is not set.
func NewMiddleware(l *Limiter, o MiddlewareOptions) (*Middleware, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: nil limiter", ErrInvalidLimit)
	}
	if o.Unavailable != FailOpen && o.Unavailable != FailClosed {
		return nil, fmt.Errorf("%w: MiddlewareOptions.Unavailable must be FailOpen or FailClosed", ErrInvalidLimit)
	}
	if o.Key == nil {
		o.Key = ClientIP()
	}
	if o.Denied == nil {
		o.Denied = deny
	}
	m := &Middleware{l: l, o: o}
	count := map[string]int{}
	for _, r := range l.policy {
		count[windowName(r.Limit.Period)]++
	}
	for _, r := range l.policy {
		n := windowName(r.Limit.Period)
		if count[n] > 1 {
			n = r.Algorithm.String() + "-" + n
		}
		m.names = append(m.names, n)
	}
	return m, nil
}

func deny(w http.ResponseWriter, _ *http.Request, res Result) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusTooManyRequests)
	fmt.Fprintf(w, "rate limit exceeded, retry in %ds\n", seconds(res.RetryAfter))
}

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// Handler returns next wrapped by the limiter.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := m.o.Key(r)
		if err == nil && id == "" {
			err = fmt.Errorf("%w: empty identifier", ErrNoKey)
		}
		if err != nil {
			m.fail(w, r, err, http.StatusBadRequest)
			return
		}
		cost := 1
		if m.o.Cost != nil {
			cost = m.o.Cost(r)
		}
		res, err := m.l.AllowN(r.Context(), id, cost)
		switch {
		case errors.Is(err, ErrInvalidCost) || errors.Is(err, keys.ErrInvalidKey):
			m.fail(w, r, err, http.StatusBadRequest)
			return
		case err != nil:
			if m.o.OnError != nil {
				m.o.OnError(r, err)
			}
			if m.o.Unavailable == FailOpen {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Retry-After", "1")
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			return
		}
		h := w.Header()
		name := strconv.Quote(m.names[res.Rule])
		limit, remaining, reset := strconv.Itoa(res.Limit), strconv.Itoa(res.Remaining), strconv.FormatInt(seconds(res.ResetAfter), 10)
		period := seconds(m.l.policy[res.Rule].Limit.Period)
		h.Set("RateLimit-Policy", name+";q="+limit+";w="+strconv.FormatInt(period, 10))
		h.Set("RateLimit", name+";r="+remaining+";t="+reset)
		h.Set("X-RateLimit-Limit", limit)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", reset)
		if !res.Allowed {
			h.Set("Retry-After", strconv.FormatInt(max(1, seconds(res.RetryAfter)), 10))
			m.o.Denied(w, r, res)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (m *Middleware) fail(w http.ResponseWriter, r *http.Request, err error, code int) {
	if m.o.OnError != nil {
		m.o.OnError(r, err)
	}
	http.Error(w, http.StatusText(code), code)
}
