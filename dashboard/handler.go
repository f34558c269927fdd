package dashboard

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/sensor"
	"github.com/redschema/redschema/session"
)

//go:embed static
var staticFS embed.FS

// TokenHeader is the request header that carries the token (WithToken).
const TokenHeader = "X-Redschema-Token"

// Fingerprint is the short name of a token that the action log lines
// carry ("token=3f9a0c1e"): the first 8 hex digits of its SHA-256, which
// tells tokens apart without revealing them.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:4])
}

// Handler is the dashboard: an http.Handler serving the page, its static
// assets and its JSON API. Build it with New; it is safe for concurrent
// use.
type Handler struct {
	opt      options
	cs       *keys.Clients
	reg      *keys.Registry // WithSchemas, or every package's (Schemas)
	mux      *http.ServeMux
	log      *slog.Logger
	refKey   []byte // keys the opaque session references shown to the page
	sessions *session.Store
	users    *session.Users
	admin    *ratelimit.Limiter // runtime config edits and block lifts without WithLimiter
	presence *presence.Inspector
	chat     *chat.Inspector
	sensor   *sensor.Client
	memory   *aimemory.Memory
	metrics  *metrics.Reader
	cache    *cache.Store
	httpHist httpHistory

	guesses     *throttle // wrong tokens per client address
	fingerprint string    // of the token, in action logs ("" without one)

	// The pages' admin reads, one Inspector per package, built in New.
	sessInsp   *session.Inspector
	cacheInsp  *cache.Inspector
	memoryInsp *aimemory.Inspector
	sensorInsp *sensor.Inspector
	lockInsp   *lock.Inspector
	rateInsp   *ratelimit.Inspector
	queueInsp  *queue.Inspector

	schemaCache *schemaReply // the last schema scan, reused for schemaReuse
	schemaAt    time.Time
	scans       singleflight.Group // the schema scan in flight, shared

	mu     sync.Mutex
	queues map[string]*queueView // opened for actions: an LRU of maxOpenQueues
}

// New returns the dashboard over the clients of WithClients or
// WithClient (one is required). It fails with ErrInvalid for a missing
// client, both client options, a refresh below 500ms, or WithWrites
// without WithToken.
func New(opts ...Option) (*Handler, error) {
	o := options{refresh: defaultRefresh, logger: slog.Default()}
	for _, f := range opts {
		f(&o)
	}
	switch {
	case o.clients == nil && o.client == nil:
		return nil, fmt.Errorf("%w: WithClients or WithClient is required", ErrInvalid)
	case o.clients != nil && o.client != nil:
		return nil, fmt.Errorf("%w: WithClients and WithClient both given", ErrInvalid)
	case o.refresh < minRefresh:
		return nil, fmt.Errorf("%w: refresh %v is below %v", ErrInvalid, o.refresh, minRefresh)
	case o.writable && o.token == "":
		return nil, fmt.Errorf("%w: WithWrites needs WithToken", ErrInvalid)
	case o.logger == nil:
		return nil, fmt.Errorf("%w: nil logger", ErrInvalid)
	}
	if err := o.ns.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	cs := o.clients
	if cs == nil {
		_, cluster := o.client.(*redis.ClusterClient)
		db := 0
		if c, ok := o.client.(*redis.Client); ok {
			db = c.Options().DB
		}
		cs = keys.Layout{}.Open(db, cluster, func(int) redis.UniversalClient { return o.client })
	}
	schemas := o.schemas
	if schemas == nil {
		schemas = Schemas()
	}
	reg, err := keys.Compose(schemas...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	h := &Handler{opt: o, cs: cs, reg: reg, log: o.logger, refKey: make([]byte, 32),
		queues: map[string]*queueView{}, guesses: newThrottle()}
	if o.token != "" {
		h.fingerprint = Fingerprint(o.token)
	}
	if _, err := rand.Read(h.refKey); err != nil {
		return nil, err
	}
	sc := cs.For(keys.Sessions)
	if h.sessions, err = session.New(sc, session.WithNamespace(o.ns)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.users, err = session.NewUsers(sc, session.WithNamespace(o.ns)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.lockInsp, err = lock.NewInspector(cs.For(keys.Locks), lock.WithNamespace(o.ns)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.rateInsp, err = ratelimit.NewInspector(cs.For(keys.RateLimits), ratelimit.WithNamespace(o.ns)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.queueInsp, err = queue.NewInspector(cs.For(keys.Queues), queue.WithNamespace(o.ns)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.sessInsp, err = session.NewInspector(sc, session.WithNamespace(o.ns)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.admin, err = ratelimit.New(cs.For(keys.RateLimits), adminPolicy, ratelimit.WithNamespace(o.ns), ratelimit.WithRuntimeConfig()); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := h.openPresenceChat(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	sensorOpts := append([]sensor.Option{sensor.WithNamespace(o.ns)}, o.sensorOpts...)
	if h.sensor, err = sensor.New(cs.For(keys.Sensors), sensorOpts...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.sensorInsp, err = sensor.NewInspector(cs.For(keys.Sensors), sensorOpts...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	defs := metrics.CommonMetrics()
	seen := map[string]bool{}
	for _, d := range defs {
		seen[d.Name] = true
	}
	for _, d := range o.metricDefs {
		if !seen[d.Name] {
			seen[d.Name] = true
			defs = append(defs, d)
		}
	}
	if h.metrics, err = metrics.NewReader(cs.For(keys.Metrics), defs, append([]metrics.Option{metrics.WithNamespace(o.ns)}, o.metricOpts...)...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	cacheOpts := append([]cache.Option{cache.WithNamespace(o.ns)}, o.cacheOpts...)
	if h.cache, err = cache.NewStore(cs.For(keys.Cache), cache.APILayout(), cacheOpts...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.cacheInsp, err = cache.NewInspector(cs.For(keys.Cache), cacheOpts...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	memoryOpts := append([]aimemory.Option{aimemory.WithNamespace(o.ns)}, o.memoryOpts...)
	if h.memory, err = aimemory.New(cs.For(keys.AIMemory), memoryOpts...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.memoryInsp, err = aimemory.NewInspector(cs.For(keys.AIMemory), memoryOpts...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	for _, nl := range o.limiters {
		if nl.name == "" || nl.l == nil {
			return nil, fmt.Errorf("%w: WithLimiter needs a name and a limiter", ErrInvalid)
		}
	}
	h.routes()
	return h, nil
}

func (h *Handler) routes() {
	m := http.NewServeMux()
	sub, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.ServeFileFS(w, r, sub, "index.html")
	})
	m.Handle("GET /api/config", h.read(h.config))
	m.Handle("GET /api/schema", h.read(h.schema))
	m.Handle("GET /api/inspect", h.read(h.inspect))
	m.Handle("GET /api/server", h.read(h.serverInfo))
	m.Handle("GET /api/keys", h.read(h.browseKeys))
	m.Handle("GET /api/queues", h.read(h.queueList))
	m.Handle("GET /api/queue", h.read(h.queueJobs))
	m.Handle("GET /api/job", h.read(h.jobDetail))
	m.Handle("POST /api/queue/pause", h.write("queue.pause", h.setPaused(true)))
	m.Handle("POST /api/queue/resume", h.write("queue.resume", h.setPaused(false)))
	m.Handle("POST /api/queue/requeue", h.write("queue.requeue", h.jobsAction("requeued", (*rawQueue).Requeue, (*rawQueue).RequeueMany)))
	m.Handle("POST /api/queue/requeue-all", h.write("queue.requeue-all", h.deadAction("requeued", requeueDead)))
	m.Handle("POST /api/queue/delete", h.write("queue.delete", h.jobsAction("deleted", (*rawQueue).Delete, (*rawQueue).DeleteMany)))
	m.Handle("POST /api/queue/purge-dead", h.write("queue.purge-dead", h.deadAction("deleted", purgeDead)))
	m.Handle("POST /api/queue/cancel", h.write("queue.cancel", h.cancelJob))
	m.Handle("POST /api/queue/run-now", h.write("queue.run-now", h.runNow))
	m.Handle("GET /api/ratelimits", h.read(h.rateLimits))
	m.Handle("POST /api/ratelimit/lift", h.write("ratelimit.lift", h.liftBlock))
	m.Handle("POST /api/ratelimit/config", h.write("ratelimit.config", h.setConfig))
	m.Handle("GET /api/presence", h.read(h.presenceChat))
	m.Handle("GET /api/locks", h.read(h.locks))
	m.Handle("GET /api/sensors", h.read(h.sensors))
	m.Handle("GET /api/cache", h.read(h.cacheStats))
	m.Handle("POST /api/cache/invalidate", h.write("cache.invalidate", h.invalidateTag))
	m.Handle("GET /api/metrics", h.read(h.metricsSnapshot))
	m.Handle("GET /api/aimemory", h.read(h.aiMemory))
	m.Handle("GET /api/sessions", h.read(h.userSessions))
	m.Handle("POST /api/session/revoke", h.write("session.revoke", h.revoke))
	m.Handle("POST /api/session/revoke-all", h.write("session.revoke_all", h.revokeAll))
	m.Handle("POST /api/user/block", h.write("user.block", h.block))
	m.Handle("POST /api/user/unblock", h.write("user.unblock", h.unblock))
	h.mux = m
}

// Close stops the background work of the clients the Handler made (the
// AI memory's and the cache's flushers). It does not close the Redis
// clients.
func (h *Handler) Close() error { return errors.Join(h.memory.Close(), h.cache.Close()) }

// ServeHTTP serves the page, its assets and the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	h.mux.ServeHTTP(w, r)
}

// apiFunc answers one API request with a value to encode as JSON, or an
// error with its HTTP status.
type apiFunc func(r *http.Request) (any, error)

// httpError is an error with the status it is answered with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, a...)}
}

// requestTimeout bounds every API request: a Redis that does not answer
// (paused, partitioned, overloaded) gives the page an error within it,
// not a request that hangs.
const requestTimeout = 5 * time.Second

// call runs f on r with the request deadline; a call that runs out of
// it is a 504 saying so. f parses the form of the request it is given:
// use that one afterwards (it returns it).
func call(f apiFunc, r *http.Request) (any, *http.Request, error) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	v, err := f(r)
	// The connection's deadline (the same instant) can fire just before
	// the context's timer: past the deadline is what counts. An error
	// that already says what happened (an httpError) is kept.
	var he *httpError
	if deadline, _ := ctx.Deadline(); err != nil && !errors.As(err, &he) && !time.Now().Before(deadline) {
		return nil, r, &httpError{http.StatusGatewayTimeout, fmt.Sprintf("Redis did not answer within %v: %v", requestTimeout, err)}
	}
	return v, r, err
}

// RequestHeader is the header the page sends on every API request
// (value "1"). A browser sends a custom header cross-site only after a
// CORS preflight, which the dashboard never grants, so a request that
// carries it, or the token's header, or Sec-Fetch-Site: same-origin,
// comes from the page itself or from a program, never from another
// site's page.
const RequestHeader = "X-Redschema-Request"

// read wraps a read-only endpoint: a request from the page (fromPage),
// then the token (when set) or a loopback client and Host.
func (h *Handler) read(f apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fromPage(r) {
			h.refuse(w, r, "read", http.StatusForbidden, crossSite)
			return
		}
		if !h.allowed(w, r, "read") {
			return
		}
		v, r, err := call(f, r)
		h.reply(w, r, v, err)
	})
}

// crossSite is the refusal of a request fromPage rejects.
const crossSite = "cross-site request refused: API requests need the " + RequestHeader + " or " + TokenHeader + " header"

// write wraps a mutating endpoint: POST (the mux checks it), writes
// enabled, a request from the page and not cross-site, and the token.
// Every attempt is logged, with the token's fingerprint.
func (h *Handler) write(action string, f apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.opt.writable {
			h.refuse(w, r, action, http.StatusForbidden, "read-only dashboard: start it with writes enabled (-write)")
			return
		}
		if !fromPage(r) || !sameOrigin(r) {
			h.refuse(w, r, action, http.StatusForbidden, crossSite)
			return
		}
		if !h.allowed(w, r, action) {
			return
		}
		v, r, err := call(f, r)
		attrs := []any{"action", action, "remote", r.RemoteAddr, "token", h.fingerprint}
		for _, k := range []string{"queue", "id", "user", "key", "tag", "per_minute", "per_hour", "per_day", "burst"} {
			if ps := r.PostForm[k]; len(ps) > 0 {
				attrs = append(attrs, k, strings.Join(ps, ","))
			}
		}
		if err != nil {
			h.log.Warn("dashboard action failed", append(attrs, "err", err)...)
		} else {
			h.log.Info("dashboard action", attrs...)
		}
		h.reply(w, r, v, err)
	})
}

// allowed checks the token, or without one a loopback client and Host;
// it answers and logs a refusal itself. Wrong tokens are throttled per
// client address (guesses).
func (h *Handler) allowed(w http.ResponseWriter, r *http.Request, action string) bool {
	if h.opt.token == "" {
		if !loopbackHost(r.Host) || !loopbackHost(r.RemoteAddr) {
			h.refuse(w, r, action, http.StatusForbidden, "no token configured: only loopback clients and hosts are served")
			return false
		}
		return true
	}
	if !h.guesses.allow(r.RemoteAddr) {
		h.refuse(w, r, action, http.StatusTooManyRequests, "too many wrong tokens from this address: wait a minute")
		return false
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(TokenHeader)), []byte(h.opt.token)) != 1 {
		h.guesses.fail(r.RemoteAddr)
		h.refuse(w, r, action, http.StatusUnauthorized, "missing or wrong token")
		return false
	}
	return true
}

func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, action string, status int, msg string) {
	h.log.Warn("dashboard request refused", "action", action, "method", r.Method, "path", r.URL.Path,
		"remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "referer", r.Header.Get("Referer"),
		"sec_fetch_site", r.Header.Get("Sec-Fetch-Site"), "status", status, "reason", msg)
	writeJSON(w, r, status, map[string]string{"error": msg})
}

func (h *Handler) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		status := http.StatusInternalServerError
		if he, ok := err.(*httpError); ok {
			status = he.status
		}
		if status >= 500 {
			h.log.Error("dashboard request failed", "path", r.URL.Path, "status", status, "err", err)
		}
		writeJSON(w, r, status, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, r, http.StatusOK, v)
}

// gzipAbove is the reply size from which a client that accepts gzip gets
// it compressed (the schema page's reply shrinks about tenfold).
const gzipAbove = 2048

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Vary", "Accept-Encoding")
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"the reply could not be encoded"}`)
	}
	b = append(b, '\n')
	if len(b) < gzipAbove || !acceptsGzip(r) {
		w.WriteHeader(status)
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	w.WriteHeader(status)
	zw := gzip.NewWriter(w)
	_, _ = zw.Write(b)
	_ = zw.Close()
}

// acceptsGzip reports whether the request's Accept-Encoding lists gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if name, _, _ := strings.Cut(strings.TrimSpace(part), ";"); strings.EqualFold(name, "gzip") {
			return true
		}
	}
	return false
}

// fromPage reports whether a request comes from the dashboard's page or
// a program rather than another site's page: it carries RequestHeader or
// TokenHeader, or the browser marks it same-origin.
func fromPage(r *http.Request) bool {
	return r.Header.Get(RequestHeader) != "" || r.Header.Get(TokenHeader) != "" ||
		r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// sameOrigin refuses what a browser marks as cross-site: Sec-Fetch-Site
// other than same-origin (or none, a typed URL), or an Origin header
// whose host is not the request's Host. Clients that send neither header
// (curl, scripts) pass; they still need the token.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	return true
}

// loopbackHost reports whether a Host header (or a remote address)
// names localhost or a loopback address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// configReply tells the page how to behave.
type configReply struct {
	RefreshMs int64    `json:"refresh_ms"`
	Writable  bool     `json:"writable"`
	Cluster   bool     `json:"cluster"`
	DBs       []int    `json:"dbs"`
	Prefix    string   `json:"prefix"`
	Pages     []string `json:"pages"`
}

func (h *Handler) config(*http.Request) (any, error) {
	return configReply{RefreshMs: h.opt.refresh.Milliseconds(), Writable: h.opt.writable,
		Cluster: h.cs.Cluster(), DBs: h.cs.DBs(), Prefix: h.opt.ns.Prefix,
		Pages: []string{"schema", "server", "keys", "queues", "sessions", "ratelimits", "presence", "locks", "sensors", "aimemory", "cache", "metrics"}}, nil
}
