package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/session"
)

// Limits of the service (seed 000 §3 gives the 15-minute window).
var (
	apiLimit     = ratelimit.Limit{Rate: 1000, Period: 15 * time.Minute} // per client IP, every /api/ route
	loginLimit   = ratelimit.PerMinute(5)                                // per account: login attempts
	messageLimit = ratelimit.PerMinute(20)                               // per user: support messages
)

// adminCapacity is how many open conversations an admin holds at most
// (seed 000: "assignments < 10").
const adminCapacity = 5

// app is the backend: the schema clients its handlers share, and the
// service's own data (accounts, devices), which a real deployment keeps
// in its database.
type app struct {
	ns  keys.Namespace
	rdb redis.UniversalClient
	log *log.Logger

	rec    *metrics.Recorder // §1-2
	reader *metrics.Reader

	perIP      *ratelimit.Limiter // §3: fixed window
	perAccount *ratelimit.Limiter // §3: sliding window, logins
	perUser    *ratelimit.Limiter // §3: sliding log at rate_limit:{id}, messages

	sessions *session.Store // §4
	users    *session.Users

	chat *chat.Chat // §5

	accounts *accounts
	devices  *devices

	stopReconciler func() // cancels the reconciler and waits for it
}

// newApp builds every client over rdb under seed 000's REDIS_KEY_PREFIX
// ("ha:" when unset). It does not contact Redis except to put the admins
// on the chat roster.
func newApp(rdb redis.UniversalClient, out io.Writer) (_ *app, err error) {
	prefix, ok := os.LookupEnv("REDIS_KEY_PREFIX")
	if !ok {
		prefix = "ha:"
	}
	a := &app{
		ns:       keys.Namespace{Prefix: prefix},
		rdb:      rdb,
		log:      log.New(out, "home-automation: ", 0),
		accounts: newAccounts(),
		devices:  newDevices(),
	}
	onFlushError := metrics.WithErrorHandler(func(err error) { a.log.Printf("metrics flush: %v (kept, retried)", err) })
	if a.rec, err = metrics.New(rdb, metrics.WithNamespace(a.ns), onFlushError); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil { // stop the recorder's flusher: the caller closes the client
			_ = a.rec.Close(context.Background())
		}
	}()
	a.rec.HTTP() // declares api_requests_total and api_latency_ms, which the middleware also records
	if a.reader, err = metrics.NewReader(rdb, a.rec.Definitions(), metrics.WithNamespace(a.ns)); err != nil {
		return nil, err
	}
	if a.perIP, err = ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: apiLimit}},
		ratelimit.WithNamespace(a.ns)); err != nil {
		return nil, err
	}
	if a.perAccount, err = ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: loginLimit}},
		ratelimit.WithNamespace(a.ns), ratelimit.WithWindowlessLogKey()); err != nil { // the seed's sliding_limit:{id}
		return nil, err
	}
	if a.perUser, err = ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: messageLimit}},
		ratelimit.WithNamespace(a.ns), ratelimit.WithRateLimitKey()); err != nil { // the seed's rate_limit:{id}
		return nil, err
	}
	if a.sessions, err = session.New(rdb, session.WithNamespace(a.ns), session.WithMaxSessions(10)); err != nil {
		return nil, err
	}
	if a.users, err = session.NewUsers(rdb, session.WithNamespace(a.ns)); err != nil { // 7 days, refreshed per request
		return nil, err
	}
	if a.chat, err = chat.New(rdb, chat.WithNamespace(a.ns), chat.WithTag("support"), chat.WithCapacity(adminCapacity)); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, id := range a.accounts.admins() {
		if err := a.chat.AddAdmin(ctx, id, adminCapacity); err != nil {
			return nil, err
		}
	}
	// Availability expiries (30 min without a Set) and idle conversations
	// are acted on by every routing call; the reconciler covers quiet times.
	rctx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	a.stopReconciler = func() { stop(); <-stopped } // returns once it no longer uses the client
	go func() {
		defer close(stopped)
		_ = a.chat.RunReconciler(rctx, 10*time.Second, func(err error) { a.log.Printf("chat reconcile: %v", err) })
	}()
	return a, nil
}

// routes returns the API. Every route is limited per client IP (fixed
// window) inside the router, so that the metrics middleware, which wraps
// the router, sees the route template of refused requests too.
func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	perIP := ratelimit.Middleware(a.perIP, ratelimit.WithOnError(a.limitError))
	authed := session.Middleware(a.sessions, session.WithUsers(a.users)) // one round trip: session + user status
	perUser := ratelimit.Middleware(a.perUser, ratelimit.WithKey(sessionUser), ratelimit.WithOnError(a.limitError))
	handle := func(pattern string, h http.HandlerFunc, mw ...func(http.Handler) http.Handler) {
		var next http.Handler = h
		for i := len(mw) - 1; i >= 0; i-- {
			next = mw[i](next)
		}
		mux.Handle(pattern, perIP(next))
	}
	user, writer, admin := authed, chain(authed, requireWrite), chain(authed, requireAdmin)

	handle("GET /api/health", a.health)
	handle("POST /api/auth/register", a.register)
	handle("POST /api/auth/login", a.login)
	handle("POST /api/auth/logout", a.logout, user)
	handle("GET /api/me", a.me, user)

	handle("GET /api/devices", a.listDevices, user) // anonymous users may view
	handle("PUT /api/devices/{id}", a.setDevice, writer)

	handle("POST /api/support/conversation", a.openConversation, writer) // anonymous users may not chat
	handle("POST /api/support/messages", a.userMessage, writer, perUser)
	handle("GET /api/support/messages", a.userMessages, writer)

	handle("PUT /api/admin/presence", a.setPresence, admin)
	handle("GET /api/admin/team", a.team, admin)
	handle("GET /api/admin/queue", a.queue, admin)
	handle("GET /api/admin/dashboard", a.dashboard, admin)
	handle("GET /api/admin/conversations/{id}/messages", a.conversationMessages, admin)
	handle("POST /api/admin/conversations/{id}/messages", a.adminReply, admin)
	handle("POST /api/admin/conversations/{id}/resolve", a.resolve, admin)
	handle("POST /api/admin/users/{id}/block", a.block, admin)
	handle("DELETE /api/admin/users/{id}/block", a.unblock, admin)
	handle("GET /api/admin/metrics", a.showMetrics, admin)
	handle("GET /api/admin/audit", a.showAudit, admin)

	// Every request counts in requests:total, the demo's over loopback
	// too; metrics.WithoutLoopback() leaves loopback requests (local health
	// checks) out of it.
	return metrics.Middleware(a.rec)(mux)
}

// chain applies middleware in order: chain(a, b)(h) is a(b(h)).
func chain(mw ...func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		for i := len(mw) - 1; i >= 0; i-- {
			h = mw[i](h)
		}
		return h
	}
}

// limitError logs what a limiter could not decide (Redis down: 503).
func (a *app) limitError(r *http.Request, err error) {
	a.log.Printf("%s %s: rate limit: %v", r.Method, r.URL.Path, err)
}

// flush sends the metrics recorded so far.
func (a *app) flush(ctx context.Context) error { return a.rec.Flush(ctx) }

// close stops the background work and flushes what the metrics hold.
func (a *app) close() {
	a.stopReconciler()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.rec.Close(ctx); err != nil && !errors.Is(err, metrics.ErrClosed) {
		a.log.Printf("metrics close: %v", err)
	}
}

// reply writes v as JSON, or err as {"error"} with the status it deserves.
func reply(w http.ResponseWriter, code int, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code = statusOf(err)
		if code == http.StatusInternalServerError || code == http.StatusServiceUnavailable {
			log.Printf("home-automation: %v", err)
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// httpError is an error with the status to answer.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func errStatus(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// statusOf maps the packages' sentinels to HTTP statuses. Anything else
// (Redis unreachable, a timeout, corrupt data) is a 503: an outage is not
// an answer.
func statusOf(err error) int {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.code
	case errors.Is(err, chat.ErrInvalid), errors.Is(err, presence.ErrInvalid), errors.Is(err, session.ErrInvalid),
		errors.Is(err, ratelimit.ErrInvalid), errors.Is(err, keys.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, session.ErrBlocked):
		return http.StatusForbidden
	case errors.Is(err, chat.ErrNotFound), errors.Is(err, chat.ErrUnknownAdmin), errors.Is(err, session.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, chat.ErrFull), errors.Is(err, chat.ErrUnavailable), errors.Is(err, chat.ErrNotAssigned):
		return http.StatusConflict
	}
	return http.StatusServiceUnavailable
}

// decode reads a JSON body of at most 64 KiB into v.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(v); err != nil {
		return errStatus(http.StatusBadRequest, "bad JSON body: %v", err)
	}
	return nil
}
