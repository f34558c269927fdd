// Command session-http is a small web service with sessions: login, an
// authenticated request, refresh-token rotation, and "log out everywhere".
//
//	go run ./examples/session-http                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/session-http
//
// Then, in another shell:
//
//	curl -s -XPOST 'http://127.0.0.1:8080/login?user=alice&device=laptop'
//	curl -s -H "Authorization: Bearer $HANDLE" http://127.0.0.1:8080/me
//	curl -s -XPOST -H "Authorization: Bearer $HANDLE" http://127.0.0.1:8080/logout-everywhere
//
// Browsers get the same handle in a cookie (HttpOnly, Secure, SameSite=Lax).
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
	"time"

	"github.com/redschema/redschema/internal/demo"
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

func run() error {
	rdb, closeRedis, err := demo.Connect(os.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()
	store, err := session.New(rdb, session.WithMaxSessions(5))
	if err != nil {
		return err
	}
	users, err := session.NewUsers(rdb)
	if err != nil {
		return err
	}
	a := &app{store: store, users: users}

	auth := store.Middleware(&session.MiddlewareOptions{Users: users})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", a.login)
	mux.HandleFunc("POST /refresh", a.refresh)
	mux.Handle("GET /me", auth(http.HandlerFunc(a.me)))
	mux.Handle("GET /sessions", auth(http.HandlerFunc(a.sessions)))
	mux.Handle("POST /posts", auth(http.HandlerFunc(a.post)))
	mux.Handle("POST /logout", auth(http.HandlerFunc(a.logout)))
	mux.Handle("POST /logout-everywhere", auth(http.HandlerFunc(a.logoutEverywhere)))

	ctx, stop := demo.SignalContext()
	defer stop()
	ln, err := net.Listen("tcp", demo.Addr())
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Printf("listening on http://%s (POST /login?user=alice&device=laptop, GET /me, POST /logout-everywhere)\n", ln.Addr())
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

// login stands in for a real credential check: it trusts ?user=.
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
	sess, refresh, err := a.store.Create(ctx, session.Info{
		UserID: userID, Email: userID + "@example.com", IPAddress: clientIP(r),
		UserAgent: r.UserAgent(), DeviceFingerprint: device,
	})
	if err != nil {
		httpError(w, err)
		return
	}
	http.SetCookie(w, a.store.Cookie("", sess))
	writeJSON(w, map[string]any{"handle": sess.Handle(), "refresh_token": refresh, "expires_at": sess.ExpiresAt})
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

func (a *app) sessions(w http.ResponseWriter, r *http.Request) {
	list, err := a.store.List(r.Context(), session.FromContext(r.Context()).UserID)
	if err != nil {
		httpError(w, err)
		return
	}
	out := make([]map[string]any, 0, len(list))
	for _, e := range list {
		out = append(out, map[string]any{"session_id": e.ID, "expires_at": e.ExpiresAt})
	}
	writeJSON(w, out)
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
	case errors.Is(err, session.ErrInvalidInput):
		code = http.StatusBadRequest
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrInvalidToken), errors.Is(err, session.ErrTokenReused):
		code = http.StatusUnauthorized
	case errors.Is(err, session.ErrBlocked):
		code = http.StatusForbidden
	}
	if code == http.StatusInternalServerError {
		log.Print(err) // details stay in the log, not in the response
	}
	http.Error(w, http.StatusText(code)+": "+publicReason(err), code)
}

// publicReason names the sentinel behind err without the key it wraps.
func publicReason(err error) string {
	for _, s := range []error{session.ErrInvalidInput, session.ErrNotFound, session.ErrInvalidToken, session.ErrTokenReused, session.ErrBlocked} {
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
