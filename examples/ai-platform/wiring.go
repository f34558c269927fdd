package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/metrics"
	"github.com/redschema/redschema/pubsub"
	"github.com/redschema/redschema/queue"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/session"
)

// describe says where the areas live.
func describe(dbs *keys.Clients) string {
	if dbs.Cluster() {
		return "a cluster: every area in DB 0"
	}
	return fmt.Sprintf("DB %v (seed 001's allocation)", dbs.DBs())
}

// platform is the service: the schema clients its handlers share, and
// its own data (accounts, API keys, files, executions), which a real
// deployment keeps in its database.
type platform struct {
	ns  keys.Namespace
	dbs *keys.Clients
	log *log.Logger

	sessions *session.Store               // DB 0
	api      *cache.Cache[cache.Response] // DB 1
	runs     *queue.Queue[Execution]      // DB 2
	jobs     *queue.Queue[FileJob]        // DB 2
	bus      *pubsub.Bus                  // DB 3
	mem      *aimemory.Memory             // DB 4
	perKey   *ratelimit.Limiter           // DB 5: API keys, runtime config
	perIP    *ratelimit.Limiter           // DB 5: logins
	perUser  *ratelimit.Limiter           // DB 5: AI chat, sliding
	locks    *lock.Client                 // DB 6
	rec      *metrics.Recorder            // DB 7
	reader   *metrics.Reader

	tokens, uploads *metrics.Counter
	depth           *metrics.Gauge

	accounts   *accounts
	keyring    *keyring
	files      *files
	executions *executions
	jwt        signer

	stopOnce sync.Once
	cancel   context.CancelFunc // stops the workers and the depth sampler
	workers  sync.WaitGroup

	shutdown     chan struct{} // closed at server shutdown: ends the event streams
	shutdownOnce sync.Once
}

// newPlatform builds every client, each on its area's database, under
// the namespace prefix, and starts the workers.
func newPlatform(dbs *keys.Clients, prefix string, out io.Writer) (_ *platform, err error) {
	p := &platform{
		ns: keys.Namespace{Prefix: prefix}, dbs: dbs, log: log.New(out, "ai-platform: ", 0),
		accounts: newAccounts(), keyring: newKeyring(), files: newFiles(), executions: newExecutions(), jwt: newSigner(),
	}
	p.shutdown = make(chan struct{})
	ns, errorHook := p.ns, cache.WithErrorHook(func(_ context.Context, key string, err error) { p.log.Printf("cache %s: %v", key, err) })
	defer func() {
		if err != nil { // nothing that runs in the background outlives a failed start
			p.closeClients()
		}
	}()
	if p.sessions, err = session.New(dbs.For(keys.Sessions), session.WithNamespace(ns), session.WithMaxSessions(20)); err != nil {
		return nil, err
	}
	if p.api, err = cache.New[cache.Response](dbs.For(keys.Cache), cache.WithNamespace(ns),
		cache.WithPolicy(cache.SeedPolicy()), cache.WithGrace(10*time.Second), errorHook); err != nil {
		return nil, err
	}
	onJobError := queue.WithErrorHandler(func(err error) { p.log.Printf("worker: %v", err) })
	fastRetry := queue.WithBackoff(queue.ExponentialBackoff(50*time.Millisecond, 2*time.Second))
	if p.runs, err = queue.New[Execution](dbs.For(keys.Queues), "n8n", queue.WithNamespace(ns),
		queue.WithMaxRetries(2), fastRetry, onJobError); err != nil {
		return nil, err
	}
	if p.jobs, err = queue.New[FileJob](dbs.For(keys.Queues), "files", queue.WithNamespace(ns), fastRetry, onJobError); err != nil {
		return nil, err
	}
	if p.bus, err = pubsub.New(dbs.For(keys.PubSub), pubsub.WithNamespace(ns), pubsub.WithSource("zentoria-api")); err != nil {
		return nil, err
	}
	if p.mem, err = aimemory.New(dbs.For(keys.AIMemory), aimemory.WithNamespace(ns), aimemory.WithBus(p.bus),
		aimemory.WithDailyBudget(dailyTokenBudget)); err != nil {
		return nil, err
	}
	// Per API key: 60/minute with bursts of 10, 1000/hour, 10000/day (the
	// seed's config fields), overridden per key at run time (SetConfig).
	if p.perKey, err = ratelimit.New(dbs.For(keys.RateLimits), ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 60, Period: time.Minute, Burst: 10}},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(1000)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(10000)},
	}, ratelimit.WithNamespace(ns), ratelimit.WithRuntimeConfig()); err != nil {
		return nil, err
	}
	if p.perIP, err = ratelimit.New(dbs.For(keys.RateLimits), ratelimit.Policy{{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerMinute(30)}},
		ratelimit.WithNamespace(ns), ratelimit.WithEndpoint("login")); err != nil { // ratelimit:ip:{ip}:login:minute
		return nil, err
	}
	if p.perUser, err = ratelimit.New(dbs.For(keys.RateLimits), ratelimit.Policy{{Algorithm: ratelimit.Sliding, Limit: ratelimit.PerMinute(30)}},
		ratelimit.WithNamespace(ns), ratelimit.WithEndpoint("ai-chat"), ratelimit.WithWindowlessLogKey()); err != nil { // ratelimit:sliding:{user}:ai-chat
		return nil, err
	}
	if p.locks, err = lock.New(dbs.For(keys.Locks), lock.WithNamespace(ns), lock.WithOwner("ai-platform")); err != nil {
		return nil, err
	}
	if p.rec, err = metrics.New(dbs.For(keys.Metrics), metrics.WithNamespace(ns),
		metrics.WithErrorHandler(func(err error) { p.log.Printf("metrics flush: %v (kept, retried)", err) })); err != nil {
		return nil, err
	}
	if err := p.rec.Declare(metrics.CommonMetrics()...); err != nil {
		return nil, err
	}
	if p.tokens, err = p.rec.Counter("ai_tokens_used", "model", "type"); err != nil {
		return nil, err
	}
	if p.uploads, err = p.rec.Counter("file_uploads_bytes"); err != nil {
		return nil, err
	}
	if p.depth, err = p.rec.Gauge("queue_depth", metrics.Latest, "queue_name"); err != nil {
		return nil, err
	}
	if p.reader, err = metrics.NewReader(dbs.For(keys.Metrics), p.rec.Definitions(), metrics.WithNamespace(ns)); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The file store is in memory and starts empty: drop what an earlier
	// process cached about it.
	if _, err := p.api.InvalidateTag(ctx, "files"); err != nil {
		return nil, err
	}
	p.startWorkers()
	return p, nil
}

// startWorkers runs the queues' workers and samples their depth.
func (p *platform) startWorkers() {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.workers.Add(3)
	go func() { defer p.workers.Done(); _ = p.runs.Run(ctx, p.runExecution, 4) }()
	go func() { defer p.workers.Done(); _ = p.jobs.Run(ctx, p.processFile, 2) }()
	go func() {
		defer p.workers.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			p.sampleDepth(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// sampleDepth sets queue_depth to each queue's ready jobs.
func (p *platform) sampleDepth(ctx context.Context) {
	if s, err := p.runs.Stats(ctx); err == nil {
		p.depth.Set(s.Pending(), p.runs.Name())
	}
	if s, err := p.jobs.Stats(ctx); err == nil {
		p.depth.Set(s.Pending(), p.jobs.Name())
	}
}

// stopWorkers stops fetching jobs and waits for the running ones (Run's
// shutdown grace).
func (p *platform) stopWorkers() {
	p.stopOnce.Do(func() {
		p.cancel()
		p.workers.Wait()
	})
}

// endStreams ends the event streams, which never go idle by themselves.
func (p *platform) endStreams() { p.shutdownOnce.Do(func() { close(p.shutdown) }) }

// close stops the workers, flushes the metrics and the caches' hit counts.
func (p *platform) close() {
	p.endStreams()
	p.stopWorkers()
	p.closeClients()
}

// closeClients flushes and closes the clients that work in the background
// (the metrics' flusher, the caches' hit counts), those created so far.
func (p *platform) closeClients() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if p.rec != nil {
		if err := p.rec.Close(ctx); err != nil && !errors.Is(err, metrics.ErrClosed) {
			p.log.Printf("metrics close: %v", err)
		}
	}
	if p.api != nil {
		_ = p.api.Close()
	}
	if p.mem != nil {
		_ = p.mem.Close()
	}
}

// routes returns the API, inside the metrics middleware (api_requests_total
// and api_latency_ms by route template).
func (p *platform) routes() http.Handler {
	mux := http.NewServeMux()
	authed := p.authenticate                                            // JWT (blacklist checked) or API key
	limited := chain(authed, p.limitAPIKeys)                            // + the API key's limits
	userFiles := cache.Middleware(p.api, cache.WithUser(principalUser), // per user, tag "files"
		cache.WithTagsFor(func(*http.Request) []string { return []string{"files"} }))
	shared := cache.Middleware(p.api, cache.WithUser(func(*http.Request) string { return "" })) // one entry for all users
	admin := chain(authed, requireAdmin)

	mux.HandleFunc("POST /api/v1/auth/login", p.login)
	mux.HandleFunc("POST /api/v1/auth/refresh", p.refresh)
	mux.Handle("POST /api/v1/auth/logout", authed(http.HandlerFunc(p.logout)))
	mux.Handle("GET /api/v1/auth/sessions", authed(http.HandlerFunc(p.listSessions)))
	mux.Handle("DELETE /api/v1/auth/sessions/{id}", authed(http.HandlerFunc(p.revokeSession)))
	mux.Handle("POST /api/v1/auth/api-keys", authed(http.HandlerFunc(p.createAPIKey)))

	mux.Handle("GET /api/v1/files/list", limited(userFiles(http.HandlerFunc(p.listFiles))))
	mux.Handle("GET /api/v1/files/{id}", limited(userFiles(http.HandlerFunc(p.getFile))))
	mux.Handle("POST /api/v1/files", limited(http.HandlerFunc(p.upload)))
	mux.Handle("GET /api/v1/workflows/list", limited(shared(http.HandlerFunc(p.listWorkflows))))
	mux.Handle("POST /api/v1/workflows/{id}/execute", limited(http.HandlerFunc(p.execute)))
	mux.Handle("GET /api/v1/executions/{id}", limited(http.HandlerFunc(p.getExecution)))
	mux.Handle("GET /api/v1/ai/models", limited(shared(http.HandlerFunc(p.listModels))))
	mux.Handle("POST /api/v1/ai/chat", limited(http.HandlerFunc(p.aiChat)))
	mux.Handle("GET /api/v1/ai/conversations/{id}", limited(http.HandlerFunc(p.aiConversation)))
	mux.Handle("GET /api/v1/ai/me", limited(http.HandlerFunc(p.aiMe)))

	mux.Handle("GET /api/v1/events", admin(http.HandlerFunc(p.events)))
	mux.Handle("GET /api/v1/admin/ratelimits/{key_id}", admin(http.HandlerFunc(p.getLimits)))
	mux.Handle("PUT /api/v1/admin/ratelimits/{key_id}", admin(http.HandlerFunc(p.setLimits)))
	mux.Handle("GET /api/v1/admin/queues/{name}", admin(http.HandlerFunc(p.queueStats)))
	mux.Handle("GET /api/v1/admin/queues/{name}/dead", admin(http.HandlerFunc(p.deadLetters)))
	mux.Handle("POST /api/v1/admin/queues/{name}/dead/{id}/requeue", admin(http.HandlerFunc(p.requeue)))
	mux.Handle("GET /api/v1/admin/metrics", admin(http.HandlerFunc(p.showMetrics)))
	mux.Handle("GET /api/v1/admin/audit", admin(http.HandlerFunc(p.showAudit)))
	return metrics.Middleware(p.rec)(mux)
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
	case errors.Is(err, keys.ErrInvalid), errors.Is(err, session.ErrInvalid), errors.Is(err, queue.ErrInvalid),
		errors.Is(err, aimemory.ErrInvalid), errors.Is(err, ratelimit.ErrInvalid), errors.Is(err, lock.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, session.ErrInvalidToken), errors.Is(err, session.ErrTokenReused), errors.Is(err, session.ErrNotFound):
		return http.StatusUnauthorized
	case errors.Is(err, queue.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, queue.ErrDuplicate):
		return http.StatusConflict
	case errors.Is(err, aimemory.ErrBudgetExceeded):
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// reply writes v as JSON with code, or err as {"error"} with the status it
// deserves.
func reply(w http.ResponseWriter, code int, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code = statusOf(err)
		if code == http.StatusServiceUnavailable {
			log.Printf("ai-platform: %v", err)
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body of at most 1 MiB into v.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v); err != nil {
		return errStatus(http.StatusBadRequest, "bad JSON body: %v", err)
	}
	return nil
}
