// Command support-chat is a support chat server (seed 000 §5, seed 004
// §2) on the chat package: users open conversations, admins go online,
// conversations are assigned least-loaded under each admin's capacity,
// and a browser (or curl) follows the unread queue, the backlog and the
// dashboards live over server-sent events.
//
//	POST /api/admins/{id}?capacity=3            add an admin to the team
//	PUT  /api/admins/{id}/availability?status=online|away|busy|offline
//	GET  /api/admins                            the team: availability and load
//	GET  /api/admins/{id}/dashboard             the admin's dashboard
//	POST /api/conversations?id=..&priority=..   open a conversation
//	POST /api/conversations/{id}/messages       {"content","sender_role","sender_id"}
//	GET  /api/conversations/{id}/messages?limit=20&before=ID
//	POST /api/conversations/{id}/read           an admin read it
//	POST /api/conversations/{id}/assign?admin=  explicit assignment or transfer
//	POST /api/conversations/{id}/resolve
//	POST /api/conversations/{id}/typing?user=..&username=..
//	GET  /api/conversations/{id}/typing
//	GET  /api/unread, /api/backlog              the queues, most urgent first
//	GET  /api/events                            server-sent events: message, assigned, resolved, read
//
//	go run ./examples/support-chat              # embedded Redis
//	curl -N http://127.0.0.1:8080/api/events &
//	curl -X POST 'http://127.0.0.1:8080/api/admins/ann?capacity=2'
//	curl -X PUT  'http://127.0.0.1:8080/api/admins/ann/availability?status=online'
//	curl -X POST 'http://127.0.0.1:8080/api/conversations?id=42&priority=high'
//	curl -X POST -d '{"content":"hello","sender_role":"user"}' http://127.0.0.1:8080/api/conversations/42/messages
//	curl http://127.0.0.1:8080/api/admins/ann/dashboard
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/chat"
	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/presence"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	rdb, closeRedis, err := connect.FromEnv(context.Background(), os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	h, closeAPI, err := newAPI(rdb, keys.Namespace{})
	if err != nil {
		return err
	}
	defer closeAPI() // before closeRedis: returns once nothing uses the client
	srv := &http.Server{Addr: connect.HTTPAddr(), Handler: h, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(closeAPI) // event streams never go idle: end them, so Shutdown can wait for them
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Printf("listening on http://%s  (try: curl -N http://%s/api/events)\n", srv.Addr, srv.Addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Println("stopped")
	return nil
}

// api serves one chat deployment.
type api struct {
	c    *chat.Chat
	done chan struct{} // closed when the API closes: ends event streams
}

// newAPI returns the server's handler and a function that stops its
// background work (the reconciler and the event streams) and returns once
// the reconciler no longer uses rdb; it may be called more than once. Its
// keys are under ns.
func newAPI(rdb redis.UniversalClient, ns keys.Namespace) (http.Handler, func(), error) {
	c, err := chat.New(rdb, chat.WithTag("support"), chat.WithNamespace(ns))
	if err != nil {
		return nil, nil, err
	}
	a := &api{c: c, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	reconciled := make(chan struct{})
	go func() {
		defer close(reconciled)
		// Acts on availability and conversation expiries while no other
		// call comes.
		_ = c.RunReconciler(ctx, 10*time.Second, func(err error) { log.Printf("reconcile: %v", err) })
	}()
	var once sync.Once
	closeAPI := func() {
		once.Do(func() {
			cancel()
			close(a.done)
			<-reconciled
		})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/admins/{id}", a.addAdmin)
	mux.HandleFunc("PUT /api/admins/{id}/availability", a.availability)
	mux.HandleFunc("GET /api/admins", a.admins)
	mux.HandleFunc("GET /api/admins/{id}/dashboard", a.dashboard)
	mux.HandleFunc("POST /api/conversations", a.open)
	mux.HandleFunc("POST /api/conversations/{id}/messages", a.appendMessage)
	mux.HandleFunc("GET /api/conversations/{id}/messages", a.messages)
	mux.HandleFunc("POST /api/conversations/{id}/read", a.read)
	mux.HandleFunc("POST /api/conversations/{id}/assign", a.assign)
	mux.HandleFunc("POST /api/conversations/{id}/resolve", a.resolve)
	mux.HandleFunc("POST /api/conversations/{id}/typing", a.startTyping)
	mux.HandleFunc("GET /api/conversations/{id}/typing", a.typers)
	mux.HandleFunc("GET /api/unread", a.queue(c.Unread))
	mux.HandleFunc("GET /api/backlog", a.queue(c.Backlog))
	mux.HandleFunc("GET /api/events", a.events)
	return mux, closeAPI, nil
}

// reply writes v as JSON, or err with the status it deserves.
func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, chat.ErrInvalid), errors.Is(err, presence.ErrInvalid), errors.Is(err, keys.ErrInvalid):
			code = http.StatusBadRequest
		case errors.Is(err, chat.ErrNotFound), errors.Is(err, chat.ErrUnknownAdmin):
			code = http.StatusNotFound
		case errors.Is(err, chat.ErrFull), errors.Is(err, chat.ErrUnavailable), errors.Is(err, chat.ErrNotAssigned):
			code = http.StatusConflict
		default:
			log.Print(err)
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

func intParam(r *http.Request, name string) int {
	n, _ := strconv.Atoi(r.URL.Query().Get(name))
	return n
}

func (a *api) addAdmin(w http.ResponseWriter, r *http.Request) {
	reply(w, map[string]string{"admin": r.PathValue("id")}, a.c.AddAdmin(r.Context(), r.PathValue("id"), intParam(r, "capacity")))
}

// availability sets an admin's availability (presence) and reconciles at
// once, so that an admin going offline has their conversations requeued
// now rather than at the next call.
func (a *api) availability(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := a.c.Availability().Set(r.Context(), id, presence.Status(r.URL.Query().Get("status"))); err != nil {
		reply(w, nil, err)
		return
	}
	rec, err := a.c.Reconcile(r.Context())
	reply(w, map[string]int{"requeued": rec.Requeued, "assigned": rec.Assigned, "expired": rec.Expired}, err)
}

func (a *api) admins(w http.ResponseWriter, r *http.Request) {
	ad, err := a.c.Admins(r.Context())
	reply(w, ad, err)
}

func (a *api) dashboard(w http.ResponseWriter, r *http.Request) {
	d, err := a.c.Dashboard(r.Context(), r.PathValue("id"))
	reply(w, map[string]any{
		"total_active": d.TotalActive, "assigned_to_me": d.AssignedToMe, "unread_count": d.UnreadCount,
		"avg_response_time": d.AvgResponse.Minutes(), "resolved_today": d.ResolvedToday, "cached": d.Cached,
	}, err)
}

func (a *api) open(w http.ResponseWriter, r *http.Request) {
	as, err := a.c.Open(r.Context(), r.URL.Query().Get("id"), chat.Priority(r.URL.Query().Get("priority")))
	reply(w, map[string]any{"conversation": as.Conversation, "admin": as.Admin, "opened": as.Opened}, err)
}

func (a *api) appendMessage(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content    string    `json:"content"`
		SenderRole chat.Role `json:"sender_role"`
		SenderID   string    `json:"sender_id"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil {
		reply(w, nil, fmt.Errorf("%w: %v", chat.ErrInvalid, err))
		return
	}
	m, err := a.c.Append(r.Context(), r.PathValue("id"), chat.Message{Content: in.Content, SenderRole: in.SenderRole, SenderID: in.SenderID})
	reply(w, m, err)
}

func (a *api) messages(w http.ResponseWriter, r *http.Request) {
	limit := intParam(r, "limit")
	if limit == 0 {
		limit = 20
	}
	page, err := a.c.Messages(r.Context(), r.PathValue("id"), limit, int64(intParam(r, "before")))
	reply(w, page, err)
}

func (a *api) read(w http.ResponseWriter, r *http.Request) {
	was, err := a.c.MarkRead(r.Context(), r.PathValue("id"))
	reply(w, map[string]bool{"was_unread": was}, err)
}

func (a *api) assign(w http.ResponseWriter, r *http.Request) {
	as, err := a.c.Assign(r.Context(), r.PathValue("id"), r.URL.Query().Get("admin"))
	reply(w, map[string]string{"admin": as.Admin, "previous": as.Previous}, err)
}

func (a *api) resolve(w http.ResponseWriter, r *http.Request) {
	admin, err := a.c.Resolve(r.Context(), r.PathValue("id"))
	reply(w, map[string]string{"resolved_by": admin}, err)
}

func (a *api) startTyping(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ok, err := a.c.Typing().Start(r.Context(), r.PathValue("id"), q.Get("user"), q.Get("username"))
	reply(w, map[string]bool{"accepted": ok}, err)
}

func (a *api) typers(w http.ResponseWriter, r *http.Request) {
	ty, err := a.c.Typing().Typers(r.Context(), r.PathValue("id"))
	out := []map[string]string{}
	for _, t := range ty {
		out = append(out, map[string]string{"userId": t.UserID, "username": t.Username})
	}
	reply(w, out, err)
}

func (a *api) queue(list func(context.Context, int) ([]chat.Waiting, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, err := list(r.Context(), 100)
		out := []map[string]any{}
		for _, x := range ws {
			out = append(out, map[string]any{"conversation": x.Conversation, "priority": x.Priority, "since": x.Since})
		}
		reply(w, out, err)
	}
}

// events streams the deployment's events as server-sent events until the
// client goes away or the API closes.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-a.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	sub, err := a.c.Subscribe(ctx)
	if err != nil {
		reply(w, nil, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fmt.Fprint(w, ": subscribed\n\n")
	fl.Flush()
	for ev := range sub.Events(ctx, func(err error) { log.Print(err) }) {
		b, _ := json.Marshal(map[string]any{
			"conversation": ev.Conversation, "admin": ev.Admin, "previous": ev.Previous,
			"reason": ev.Reason, "at": ev.At, "message": ev.Message,
		})
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Kind, b)
		fl.Flush()
	}
}
