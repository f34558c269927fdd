package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/presence"
	"github.com/redschema/redschema/queue"
)

// app is one deployment: the Redis-backed parts (presence, typing, the
// push queue, one scheduler per app instance) and the application's
// database (db, in memory here).
type app struct {
	rdb    redis.UniversalClient
	ns     keys.Namespace
	out    io.Writer
	tr     *presence.Tracker
	typing *presence.Typing
	pushes *queue.Queue[push]
	db     *db
	// instances are the two app instances' schedulers, each with its own
	// lock client, as separate processes would have.
	instances map[string]*scheduler

	ctx    context.Context // ends the worker and the schedulers
	cancel context.CancelFunc
	bg     sync.WaitGroup
	once   sync.Once
}

func newApp(rdb redis.UniversalClient, ns keys.Namespace, out io.Writer) (*app, error) {
	// Seed 004's presence: {"userId","status","lastSeen"} for 300 s after
	// the freshest heartbeat, deleted when the last device leaves; typing
	// indicators of 3 s, one write per 2 s.
	opts := []presence.Option{presence.WithNamespace(ns), presence.WithProfile(presence.CompactProfile())}
	tr, err := presence.New(rdb, opts...)
	if err != nil {
		return nil, err
	}
	typing := tr.Typing()
	pushes, err := queue.New[push](rdb, "fcm", queue.WithNamespace(ns), queue.WithMaxRetries(3),
		queue.WithBackoff(queue.ExponentialBackoff(100*time.Millisecond, 5*time.Second)))
	if err != nil {
		return nil, err
	}
	a := &app{rdb: rdb, ns: ns, out: out, tr: tr, typing: typing, pushes: pushes, db: newDB(), instances: map[string]*scheduler{}}
	for _, name := range []string{"app-1", "app-2"} {
		s, err := newScheduler(a, name)
		if err != nil {
			return nil, err
		}
		a.instances[name] = s
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		if err := pushes.Run(a.ctx, a.sendPush, 4); err != nil {
			fmt.Fprintln(out, "push worker:", err)
		}
	}()
	return a, nil
}

// close stops the schedulers and the push worker (which finishes the
// pushes it holds) and waits for them.
func (a *app) close() {
	a.once.Do(func() {
		a.cancel()
		a.bg.Wait()
	})
}

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/users/{user}/connections", a.connect)
	mux.HandleFunc("POST /api/users/{user}/connections/{conn}/heartbeat", a.heartbeat)
	mux.HandleFunc("DELETE /api/users/{user}/connections/{conn}", a.disconnect)
	mux.HandleFunc("GET /api/users/{user}/presence", a.presenceOf)
	mux.HandleFunc("POST /api/users/{user}/tokens", a.addToken)
	mux.HandleFunc("GET /api/users/{user}/unread", a.unread)
	mux.HandleFunc("PUT /api/conversations/{conv}", a.createConversation)
	mux.HandleFunc("POST /api/conversations/{conv}/messages", a.postMessage)
	mux.HandleFunc("POST /api/conversations/{conv}/read/{user}", a.markRead)
	mux.HandleFunc("POST /api/conversations/{conv}/typing/{user}", a.startTyping)
	mux.HandleFunc("DELETE /api/conversations/{conv}/typing/{user}", a.stopTyping)
	mux.HandleFunc("GET /api/conversations/{conv}/typing", a.typers)
	mux.HandleFunc("POST /api/admin/jobs/{job}", a.runJob)
	mux.HandleFunc("GET /api/admin/pushes", a.sentPushes)
	mux.HandleFunc("GET /api/admin/audit", a.showAudit)
	return mux
}

// connect registers a device (the seed's Socket.IO connection): POST
// /api/users/{user}/connections {"device":"web"} answers the connection
// ID and how often to heartbeat.
func (a *app) connect(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Device string `json:"device"`
	}
	if !decode(w, r, &in) {
		return
	}
	conn := "conn_" + randomHex(6)
	res, err := a.tr.Connect(r.Context(), r.PathValue("user"), presence.Conn{ID: conn, Metadata: presence.Metadata{Device: in.Device, UserAgent: r.UserAgent()}})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"connection": conn, "heartbeat": a.tr.Profile().Heartbeat.String(), "connections": res.Connections})
}

// heartbeat keeps a device online; 410 Gone means it was pruned (no
// heartbeat for 5 minutes) and must connect again.
func (a *app) heartbeat(w http.ResponseWriter, r *http.Request) {
	res, err := a.tr.Heartbeat(r.Context(), r.PathValue("user"), r.PathValue("conn"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connections": res.Connections})
}

func (a *app) disconnect(w http.ResponseWriter, r *http.Request) {
	res, err := a.tr.Disconnect(r.Context(), r.PathValue("user"), r.PathValue("conn"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connections": res.Connections, "offline": res.Changed})
}

// presenceView is a user's presence as seed 004 stores it.
type presenceView struct {
	UserID   string     `json:"userId"`
	Status   string     `json:"status"`
	LastSeen *time.Time `json:"lastSeen,omitempty"`
}

func (a *app) presenceOf(w http.ResponseWriter, r *http.Request) {
	p, err := a.tr.Get(r.Context(), r.PathValue("user"))
	if err != nil {
		fail(w, err)
		return
	}
	p = p.Public()
	v := presenceView{UserID: p.UserID, Status: string(p.Status)}
	if !p.LastSeen.IsZero() {
		t := p.LastSeen.UTC()
		v.LastSeen = &t
	}
	writeJSON(w, http.StatusOK, v)
}

func (a *app) addToken(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if !decode(w, r, &in) || !nonEmpty(w, in.Token) {
		return
	}
	a.db.addToken(r.PathValue("user"), in.Token)
	w.WriteHeader(http.StatusNoContent)
}

func (a *app) unread(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.db.unreadOf(r.PathValue("user")))
}

func (a *app) createConversation(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Members []string `json:"members"`
	}
	if !decode(w, r, &in) {
		return
	}
	if len(in.Members) < 2 {
		httpError(w, http.StatusBadRequest, "a conversation has at least two members")
		return
	}
	a.db.createConversation(r.PathValue("conv"), in.Members)
	w.WriteHeader(http.StatusNoContent)
}

// postMessage stores a message (the application's database), clears the
// sender's typing indicator, counts it unread for the other members and
// queues a push for those of them who are offline: online ones get it on
// their open connection. The online check is one pipeline for all of
// them.
func (a *app) postMessage(w http.ResponseWriter, r *http.Request) {
	var in struct {
		From string `json:"from"`
		Text string `json:"text"`
	}
	if !decode(w, r, &in) || !nonEmpty(w, in.From, in.Text) {
		return
	}
	ctx, conv := r.Context(), r.PathValue("conv")
	others, ok := a.db.addMessage(conv, in.From)
	if !ok {
		httpError(w, http.StatusNotFound, "no conversation %q with member %q", conv, in.From)
		return
	}
	if _, err := a.typing.Stop(ctx, conv, in.From); err != nil {
		fail(w, err)
		return
	}
	online, err := a.tr.Online(ctx, others)
	if err != nil {
		fail(w, err)
		return
	}
	isOnline := map[string]bool{}
	for _, u := range online {
		isOnline[u] = true
	}
	res := struct {
		Live   []string `json:"delivered_live"`
		Pushed []string `json:"pushed"`
	}{Live: []string{}, Pushed: []string{}}
	for _, u := range others {
		if isOnline[u] {
			res.Live = append(res.Live, u)
			continue
		}
		if _, err := a.pushes.Enqueue(ctx, push{User: u, Kind: "message", Conversation: conv, Text: in.From + ": " + in.Text}); err != nil {
			fail(w, err)
			return
		}
		res.Pushed = append(res.Pushed, u)
	}
	writeJSON(w, http.StatusCreated, res)
}

func (a *app) markRead(w http.ResponseWriter, r *http.Request) {
	a.db.markRead(r.PathValue("conv"), r.PathValue("user"))
	w.WriteHeader(http.StatusNoContent)
}

// startTyping is the seed's typing:start: 200 {"written":false} when
// throttled (one write per 2 s per user and conversation, whichever app
// instance receives it).
func (a *app) startTyping(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Username string `json:"username"`
	}
	if !decode(w, r, &in) {
		return
	}
	ok, err := a.typing.Start(r.Context(), r.PathValue("conv"), r.PathValue("user"), in.Username)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"written": ok})
}

func (a *app) stopTyping(w http.ResponseWriter, r *http.Request) {
	ok, err := a.typing.Stop(r.Context(), r.PathValue("conv"), r.PathValue("user"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"was_typing": ok})
}

// typers lists who is typing in a conversation: one script over the
// conversation's index, where the seed ran KEYS typing:{conv}:*.
func (a *app) typers(w http.ResponseWriter, r *http.Request) {
	ts, err := a.typing.Typers(r.Context(), r.PathValue("conv"))
	if err != nil {
		fail(w, err)
		return
	}
	names := []string{}
	for _, t := range ts {
		names = append(names, t.Username)
	}
	sort.Strings(names)
	writeJSON(w, http.StatusOK, map[string][]string{"typing": names})
}

// runJob has an app instance try a job now, as its scheduler does every
// minute: POST /api/admin/jobs/{job}?instance=app-2.
func (a *app) runJob(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("instance")
	if name == "" {
		name = "app-1"
	}
	s, ok := a.instances[name]
	if !ok {
		httpError(w, http.StatusNotFound, "no instance %q", name)
		return
	}
	rep, err := s.try(r.Context(), r.PathValue("job"))
	if errors.Is(err, errNoJob) {
		httpError(w, http.StatusNotFound, "%v", err)
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (a *app) sentPushes(w http.ResponseWriter, r *http.Request) {
	st, err := a.pushes.Stats(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sent": a.db.sentPushes(), "processed": st.TotalProcessed, "failed": st.TotalFailed, "dead": st.TotalDead})
}

// audit scans the app's keyspace (every master of a cluster) against the
// registry: keys without their TTL (cron:last-run is persistent by
// design), of the wrong type, or matching no pattern.
func (a *app) audit(ctx context.Context) (keys.AuditSummary, error) {
	reg, err := keys.Compose(lock.Schema(), presence.Schema(), queue.Schema())
	if err != nil {
		return keys.AuditSummary{}, err
	}
	rep, err := reg.Audit(ctx, a.rdb, keys.AuditOptions{Namespace: a.ns})
	if err != nil {
		return keys.AuditSummary{}, err
	}
	return rep.Summary(a.ns), nil
}

func (a *app) showAudit(w http.ResponseWriter, r *http.Request) {
	rep, err := a.audit(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// fail maps the packages' errors to HTTP statuses.
func fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, presence.ErrInvalid), errors.Is(err, queue.ErrInvalid), errors.Is(err, lock.ErrInvalid):
		httpError(w, http.StatusBadRequest, "%v", err)
	case errors.Is(err, presence.ErrUnknownConnection):
		httpError(w, http.StatusGone, "%v: connect again", err)
	case errors.Is(err, presence.ErrTooManyConnections):
		httpError(w, http.StatusTooManyRequests, "%v", err)
	default:
		httpError(w, http.StatusInternalServerError, "%v", err)
	}
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(v); err != nil {
		httpError(w, http.StatusBadRequest, "body: %v", err)
		return false
	}
	return true
}

func nonEmpty(w http.ResponseWriter, vs ...string) bool {
	for _, v := range vs {
		if v == "" {
			httpError(w, http.StatusBadRequest, "missing field")
			return false
		}
	}
	return true
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, map[string]string{"error": fmt.Sprintf(format, args...)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
