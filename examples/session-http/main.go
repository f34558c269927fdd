// Command session-http is a small web service with sessions: login, an
// authenticated request, refresh-token rotation, a list of the user's
// devices with "log this one out", and "log out everywhere".
//
//	go run ./examples/session-http                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/session-http
//
// Then, in another shell:
//
//	curl -s -XPOST 'http://127.0.0.1:8080/login?user=alice&device=laptop'   # {"handle": ..., "refresh_token": ...}
//	curl -s -H "Authorization: Bearer $HANDLE" http://127.0.0.1:8080/me
//	curl -s -H "Authorization: Bearer $HANDLE" http://127.0.0.1:8080/sessions
//	curl -s -XDELETE -H "Authorization: Bearer $HANDLE" http://127.0.0.1:8080/sessions/$ID
//	curl -s -XPOST -d "handle=$HANDLE&refresh_token=$REFRESH" http://127.0.0.1:8080/refresh
//	curl -s -XPOST -H "Authorization: Bearer $HANDLE" http://127.0.0.1:8080/logout-everywhere
//
// The handle is the only credential: it is shown once, at login, and kept
// by the client (browsers get it in a cookie: HttpOnly, Secure,
// SameSite=Lax). GET /sessions lists session IDs, which can log a device
// out but never log anyone in.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/session"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

type app struct {
	store *session.Store
	users *session.Users
}

// newApp returns the service with its keys under ns.
func newApp(rdb redis.UniversalClient, ns keys.Namespace) (*app, error) {
	store, err := session.New(rdb, session.WithMaxSessions(5), session.WithNamespace(ns))
	if err != nil {
		return nil, err
	}
	users, err := session.NewUsers(rdb, session.WithNamespace(ns))
	if err != nil {
		return nil, err
	}
	return &app{store: store, users: users}, nil
}

// routes returns the service's handlers.
func (a *app) routes() http.Handler {
	auth := session.Middleware(a.store, session.WithUsers(a.users))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", a.login)
	mux.HandleFunc("POST /refresh", a.refresh)
	mux.Handle("GET /me", auth(http.HandlerFunc(a.me)))
	mux.Handle("GET /sessions", auth(http.HandlerFunc(a.sessions)))
	mux.Handle("DELETE /sessions/{id}", auth(http.HandlerFunc(a.revokeOne)))
	mux.Handle("POST /posts", auth(http.HandlerFunc(a.post)))
	mux.Handle("POST /logout", auth(http.HandlerFunc(a.logout)))
	mux.Handle("POST /logout-everywhere", auth(http.HandlerFunc(a.logoutEverywhere)))
	return mux
}

func run() error {
	rdb, closeRedis, err := connect.FromEnv(context.Background(), os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()
	a, err := newApp(rdb, keys.Namespace{})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", connect.HTTPAddr())
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.routes(), ReadHeaderTimeout: 5 * time.Second}
	fmt.Printf("listening on http://%s (POST /login?user=alice&device=laptop, GET /me, GET /sessions, POST /logout-everywhere)\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Println("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// login stands in for a real credential check: it trusts ?user=. The
// response is the one place the handle and the refresh token appear.
func (a *app) login(w http.ResponseWriter, r *http.Request) {
	userID, device := r.FormValue("user"), r.FormValue("device")
	if device == "" {
		device = "unknown"
	}
	ctx := r.Context()
	if _, err := a.users.Login(ctx, userID, session.LoginInfo{DeviceID: device, IPAddress: clientIP(r), Anonymous: r.FormValue("anonymous") != ""}); err != nil {
		httpError(w, err)
		return
	}
	sess, tok, err := a.store.Create(ctx, session.Info{
		UserID: userID, Email: userID + "@example.com", IPAddress: clientIP(r),
		UserAgent: r.UserAgent(), DeviceFingerprint: device,
	})
	if err != nil {
		httpError(w, err)
		return
	}
	http.SetCookie(w, session.Cookie("", tok.Handle, sess))
	writeJSON(w, map[string]any{"handle": tok.Handle, "refresh_token": tok.Refresh, "session_id": sess.ID, "expires_at": sess.ExpiresAt})
}

func (a *app) refresh(w http.ResponseWriter, r *http.Request) {
	userID, sid, err := session.ParseHandle(r.FormValue("handle"))
	if err != nil {
		httpError(w, err)
		return
	}
	next, err := a.store.RotateRefresh(r.Context(), userID, sid, r.FormValue("refresh_token"))
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]any{"refresh_token": next})
}

func (a *app) me(w http.ResponseWriter, r *http.Request) {
	s, u := session.FromContext(r.Context()), session.UserFromContext(r.Context())
	writeJSON(w, map[string]any{
		"user_id": s.UserID, "session_id": s.ID, "status": u.Status, "can_write": u.CanWrite(),
		"created_at": s.CreatedAt, "last_activity": s.LastActivity, "expires_at": s.ExpiresAt,
		"absolute_expiry": s.AbsoluteExpiry,
	})
}

// sessions lists the user's devices by session ID: an ID can log a device
// out (DELETE /sessions/{id}) but is not a credential.
func (a *app) sessions(w http.ResponseWriter, r *http.Request) {
	cur := session.FromContext(r.Context())
	list, err := a.store.List(r.Context(), cur.UserID)
	if err != nil {
		httpError(w, err)
		return
	}
	out := make([]map[string]any, 0, len(list))
	for _, e := range list {
		out = append(out, map[string]any{"session_id": e.ID, "expires_at": e.ExpiresAt, "current": e.ID == cur.ID})
	}
	writeJSON(w, out)
}

// revokeOne logs out one of the user's own devices.
func (a *app) revokeOne(w http.ResponseWriter, r *http.Request) {
	s := session.FromContext(r.Context())
	ok, err := a.store.Revoke(r.Context(), s.UserID, r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]any{"revoked": ok})
}

// post is a write: anonymous users may read but not write.
func (a *app) post(w http.ResponseWriter, r *http.Request) {
	if !session.UserFromContext(r.Context()).CanWrite() {
		http.Error(w, "read-only (anonymous) user", http.StatusForbidden)
		return
	}
	writeJSON(w, map[string]any{"posted": true})
}

func (a *app) logout(w http.ResponseWriter, r *http.Request) {
	s := session.FromContext(r.Context())
	if _, err := a.store.Revoke(r.Context(), s.UserID, s.ID); err != nil {
		httpError(w, err)
		return
	}
	http.SetCookie(w, session.ClearCookie(""))
	writeJSON(w, map[string]any{"revoked": 1})
}

func (a *app) logoutEverywhere(w http.ResponseWriter, r *http.Request) {
	s := session.FromContext(r.Context())
	n, err := a.store.RevokeAll(r.Context(), s.UserID)
	if err == nil {
		err = a.users.Logout(r.Context(), s.UserID)
	}
	if err != nil {
		httpError(w, err)
		return
	}
	http.SetCookie(w, session.ClearCookie(""))
	writeJSON(w, map[string]any{"revoked": n})
}

func httpError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, session.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrInvalidToken), errors.Is(err, session.ErrTokenReused):
		code = http.StatusUnauthorized
	case errors.Is(err, session.ErrBlocked):
		code = http.StatusForbidden
	}
	if code == http.StatusInternalServerError {
		log.Print(err) // details stay in the log (they name keys, never a credential)
	}
	http.Error(w, http.StatusText(code)+": "+publicReason(err), code)
}

// publicReason names the sentinel behind err without the key it wraps.
func publicReason(err error) string {
	for _, s := range []error{session.ErrInvalid, session.ErrNotFound, session.ErrInvalidToken, session.ErrTokenReused, session.ErrBlocked} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "internal error"
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return ""
	}
	return host
}
