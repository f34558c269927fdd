package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

// service is the presence service: one tracker (seed 002's detailed
// profile: 60 s TTL, heartbeat every 30 s, last seen kept 600 s), one
// subscription to its events fanned out to the open streams, a sweeper.
type service struct {
	rdb redis.UniversalClient
	ns  keys.Namespace
	tr  *presence.Tracker
	out io.Writer

	ctx    context.Context // cancelled by stopStreams: ends every stream
	cancel context.CancelFunc
	bg     sync.WaitGroup // the event pump and the sweeper
	open   sync.WaitGroup // open streams, until their Disconnect is done

	mu      sync.Mutex
	streams map[chan presence.Event]struct{}
	count   int // streams opened since start
}

func newService(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, out io.Writer) (*service, error) {
	tr, err := presence.New(rdb, presence.WithNamespace(ns), presence.WithProfile(presence.DetailedProfile()))
	if err != nil {
		return nil, err
	}
	s := &service{rdb: rdb, ns: ns, tr: tr, out: out, streams: map[chan presence.Event]struct{}{}}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))

	// One subscription per process; every stream gets the events it
	// watches from it. Subscribe returns once the server confirmed it,
	// so no change made after this point is missed.
	sub, err := tr.Subscribe(ctx)
	if err != nil {
		s.cancel()
		return nil, err
	}
	events := sub.Events(s.ctx, func(err error) { fmt.Fprintln(out, "event skipped:", err) })
	s.bg.Add(2)
	go func() {
		defer s.bg.Done()
		for ev := range events {
			s.broadcast(ev)
		}
	}()
	// The sweeper visits 512 of the 16384 index shards a second: a device
	// that died silently is announced offline within about 32 s of its
	// presence expiring (the sweep window is the 600 s retention).
	go func() {
		defer s.bg.Done()
		_ = tr.RunSweeper(s.ctx, time.Second, 512, func(err error) { fmt.Fprintln(out, "sweep:", err) })
	}()
	return s, nil
}

// stopStreams ends every open stream, waits for their devices to be
// disconnected and returns how many there were.
func (s *service) stopStreams() int {
	s.mu.Lock()
	n := len(s.streams)
	s.mu.Unlock()
	s.cancel()
	s.open.Wait()
	return n
}

func (s *service) close() {
	s.cancel()
	s.open.Wait()
	s.bg.Wait()
}

// broadcast hands ev to every stream. A stream too slow to take it is
// dropped: its client reconnects and gets a fresh snapshot.
func (s *service) broadcast(ev presence.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.streams {
		select {
		case ch <- ev:
		default:
			delete(s.streams, ch)
			close(ch)
		}
	}
}

func (s *service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/stream", s.stream)
	mux.HandleFunc("POST /api/presence/batch", s.batch)
	mux.HandleFunc("GET /api/users/{user}/presence", s.presenceOf)
	mux.HandleFunc("PUT /api/users/{user}/status", s.setStatus)
	mux.HandleFunc("PUT /api/users/{user}/activity", s.setActivity)
	mux.HandleFunc("GET /api/online", s.online)
	mux.HandleFunc("GET /api/audit", s.showAudit)
	return mux
}

// userView is a user's presence as other users see it (an invisible user
// is offline), in seed 002's field names.
type userView struct {
	UserID      string     `json:"userId"`
	Status      string     `json:"status"`
	LastSeen    *time.Time `json:"lastSeen,omitempty"`
	Connections int        `json:"activeConnections"`
	Device      string     `json:"device,omitempty"`
	Activity    string     `json:"lastActivity,omitempty"`
	Devices     []string   `json:"devices,omitempty"`
}

func view(p presence.Presence) userView {
	pub := p.Public()
	v := userView{UserID: p.UserID, Status: string(pub.Status), Connections: pub.Connections, Device: pub.Device, Activity: pub.Activity}
	if !pub.LastSeen.IsZero() {
		t := pub.LastSeen.UTC()
		v.LastSeen = &t
	}
	return v
}

// changeView is a presence change as a stream sends it.
type changeView struct {
	UserID   string    `json:"userId"`
	Status   string    `json:"status"`
	Previous string    `json:"previous"`
	At       time.Time `json:"at"`
}

// stream is a device's connection: GET /api/stream?user=U&device=D
// [&watch=A,B]. It registers the connection, sends a "hello" event
// (the connection ID), a "presence" event per watched user (the
// snapshot), then a "change" event per change of a watched user and a
// comment at every heartbeat, until the client goes or the service
// stops; then it disconnects the device.
// maxWatched is the most watched users one stream takes: the most one
// Tracker.GetMany call takes.
const maxWatched = 10000

func (s *service) stream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	user, device := q.Get("user"), q.Get("device")
	var watch []string
	if q.Get("watch") != "" {
		watch = strings.Split(q.Get("watch"), ",")
	}
	if user == "" || len(watch) > maxWatched {
		httpError(w, http.StatusBadRequest, "user is required; at most %d watched users", maxWatched)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}

	// Listen before the snapshot, so that no change falls between them.
	ch := make(chan presence.Event, 64)
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		httpError(w, http.StatusServiceUnavailable, "stopping")
		return
	}
	s.streams[ch] = struct{}{}
	s.count++
	s.open.Add(1)
	s.mu.Unlock()
	defer s.open.Done()
	defer func() {
		s.mu.Lock()
		if _, ok := s.streams[ch]; ok {
			delete(s.streams, ch)
			close(ch)
		}
		s.mu.Unlock()
	}()

	ctx := r.Context()
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	conn := presence.Conn{ID: "conn_" + randomHex(6), Metadata: presence.Metadata{Device: device, UserAgent: r.UserAgent(), IP: ip}}
	conn.Metadata.SocketID = "sse_" + conn.ID[len("conn_"):]
	if _, err := s.tr.Connect(ctx, user, conn); err != nil {
		fail(w, err)
		return
	}
	defer func() {
		// The request's context is over: disconnect within a context of
		// our own.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := s.tr.Disconnect(dctx, user, conn.ID); err != nil {
			fmt.Fprintf(s.out, "disconnect %s/%s: %v\n", user, conn.ID, err)
		}
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	hb := s.tr.Profile().Heartbeat
	if !send(w, fl, "hello", map[string]any{"connection": conn.ID, "heartbeat": hb.String()}) {
		return
	}
	watched := map[string]bool{}
	if len(watch) > 0 {
		ps, err := s.tr.GetMany(ctx, watch)
		if err != nil {
			_ = send(w, fl, "error", map[string]string{"error": err.Error()})
			return
		}
		for _, p := range ps {
			watched[p.UserID] = true
			if !send(w, fl, "presence", view(p)) {
				return
			}
		}
	}

	tick := time.NewTicker(hb)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return // too slow: the client reconnects for a fresh snapshot
			}
			if watched[ev.UserID] {
				if !send(w, fl, "change", changeView{UserID: ev.UserID, Status: string(ev.Status), Previous: string(ev.Previous), At: ev.At.UTC()}) {
					return
				}
			}
		case <-tick.C:
			// The socket is alive (the comment below gets through), so
			// the device is: refresh its connection.
			_, err := s.tr.Heartbeat(ctx, user, conn.ID)
			if errors.Is(err, presence.ErrUnknownConnection) {
				// Pruned (a heartbeat came too late): register it again.
				_, err = s.tr.Connect(ctx, user, conn)
			}
			if err != nil {
				_ = send(w, fl, "error", map[string]string{"error": err.Error()})
				return
			}
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// send writes one SSE event and reports whether the client is still there.
func send(w io.Writer, fl http.Flusher, event string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return false
	}
	fl.Flush()
	return true
}

// batch is the seed's "online users from a list": POST
// /api/presence/batch {"users":[...]} answers who of them is online (as
// others see it) and each one's presence, from one pipeline.
func (s *service) batch(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Users []string `json:"users"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
		httpError(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	ps, err := s.tr.GetMany(r.Context(), in.Users)
	if err != nil {
		fail(w, err)
		return
	}
	res := struct {
		Online   []string   `json:"online"`
		Presence []userView `json:"presence"`
	}{Online: []string{}, Presence: []userView{}}
	for _, p := range ps {
		v := view(p)
		if v.Status != string(presence.Offline) {
			res.Online = append(res.Online, p.UserID)
		}
		res.Presence = append(res.Presence, v)
	}
	writeJSON(w, http.StatusOK, res)
}

// presenceOf is one user as others see them, with the device types of
// their live connections (the seed's "Handle multiple devices").
func (s *service) presenceOf(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	p, err := s.tr.Get(r.Context(), user)
	if err != nil {
		fail(w, err)
		return
	}
	v := view(p)
	if v.Status != string(presence.Offline) {
		conns, err := s.tr.Connections(r.Context(), user)
		if err != nil {
			fail(w, err)
			return
		}
		seen := map[string]bool{}
		for _, c := range conns {
			if d := c.Metadata.Device; d != "" && !seen[d] {
				seen[d] = true
				v.Devices = append(v.Devices, d)
			}
		}
		sort.Strings(v.Devices)
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *service) setStatus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil {
		httpError(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	res, err := s.tr.SetStatus(r.Context(), r.PathValue("user"), presence.Status(in.Status))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": res.Status, "changed": res.Changed})
}

func (s *service) setActivity(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Activity string `json:"activity"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil {
		httpError(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	if err := s.tr.SetActivity(r.Context(), r.PathValue("user"), in.Activity); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"lastActivity": in.Activity})
}

// online lists everyone online as others see them, from the online index
// (16384 small reads in one pipeline: a dashboard's call, not a
// request's).
func (s *service) online(w http.ResponseWriter, r *http.Request) {
	users, err := s.tr.OnlineNow(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	sort.Strings(users)
	if users == nil {
		users = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(users), "users": users})
}

// audit scans the service's keyspace (every master of a cluster) against
// the registry: keys without their TTL, of the wrong type, or matching
// no pattern.
func (s *service) audit(ctx context.Context) (keys.AuditSummary, error) {
	reg, err := keys.Compose(presence.Schema())
	if err != nil {
		return keys.AuditSummary{}, err
	}
	rep, err := reg.Audit(ctx, s.rdb, keys.AuditOptions{Namespace: s.ns})
	if err != nil {
		return keys.AuditSummary{}, err
	}
	return rep.Summary(s.ns), nil
}

func (s *service) showAudit(w http.ResponseWriter, r *http.Request) {
	rep, err := s.audit(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// fail maps the presence errors to HTTP statuses.
func fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, presence.ErrInvalid):
		httpError(w, http.StatusBadRequest, "%v", err)
	case errors.Is(err, presence.ErrOffline):
		httpError(w, http.StatusConflict, "%v", err)
	case errors.Is(err, presence.ErrTooManyConnections):
		httpError(w, http.StatusTooManyRequests, "%v", err)
	default:
		httpError(w, http.StatusInternalServerError, "%v", err)
	}
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
