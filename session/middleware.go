package session

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

// DefaultCookieName is the cookie the middleware and Cookie use when no
// name is given.
const DefaultCookieName = "session"

type ctxKey int

const (
	sessionCtxKey ctxKey = iota
	userCtxKey
)

// FromContext returns the session the middleware put in ctx, or nil.
func FromContext(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionCtxKey).(*Session)
	return s
}

// UserFromContext returns the user record the middleware put in ctx (when
// MiddlewareOptions.Users is set), or nil.
func UserFromContext(ctx context.Context) *User {
	u, _ := ctx.Value(userCtxKey).(*User)
	return u
}

// MiddlewareOptions configures Store.Middleware. A nil *MiddlewareOptions
// means the defaults.
type MiddlewareOptions struct {
	// CookieName is the cookie holding the session handle; default
	// DefaultCookieName.
	CookieName string
	// Users, when set, also validates the user record of the session's
	// user, in the same script and round trip (Store.Authenticate): a
	// blocked or missing record is 401, and the record is put in the
	// request context (UserFromContext).
	Users *Users
}

// Middleware returns net/http middleware that authenticates each request.
// The session handle (Session.Handle) is read from "Authorization: Bearer
// <handle>" or, without that header, from the cookie (any other
// Authorization scheme is 401). The session is loaded and slid with Get,
// or Authenticate when Users is set (one round trip either way, unless
// hash tags are off: see Authenticate), and put in the request context
// (FromContext). A missing, malformed, expired, revoked or blocked session
// is answered 401 Unauthorized; a Redis failure or corrupt data 503
// Service Unavailable.
func (s *Store) Middleware(opt *MiddlewareOptions) func(http.Handler) http.Handler {
	var o MiddlewareOptions
	if opt != nil {
		o = *opt
	}
	if o.CookieName == "" {
		o.CookieName = DefaultCookieName
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := handleFrom(r, o.CookieName)
			if h == "" {
				unauthorized(w)
				return
			}
			userID, sid, err := ParseHandle(h)
			if err != nil {
				unauthorized(w)
				return
			}
			ctx := r.Context()
			var sess *Session
			var usr *User
			if o.Users != nil {
				sess, usr, err = s.Authenticate(ctx, o.Users, userID, sid)
			} else {
				sess, err = s.Get(ctx, userID, sid)
			}
			if err != nil {
				fail(w, err)
				return
			}
			ctx = context.WithValue(ctx, sessionCtxKey, sess)
			if usr != nil {
				ctx = context.WithValue(ctx, userCtxKey, usr)
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

func handleFrom(r *http.Request, cookie string) string {
	if a := r.Header.Get("Authorization"); a != "" {
		const p = "Bearer "
		if len(a) > len(p) && strings.EqualFold(a[:len(p)], p) {
			return strings.TrimSpace(a[len(p):])
		}
		return ""
	}
	if c, err := r.Cookie(cookie); err == nil {
		return c.Value
	}
	return ""
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="session"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
}

func fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrBlocked), errors.Is(err, ErrInvalidInput), errors.Is(err, ErrInvalidToken):
		unauthorized(w)
	default:
		http.Error(w, "session store unavailable", http.StatusServiceUnavailable)
	}
}

// Cookie returns a cookie carrying sess's handle with safe defaults:
// HttpOnly, Secure, SameSite=Lax, Path "/", and Max-Age until the
// session's absolute expiry (the server enforces the idle timeout). An
// empty name means DefaultCookieName. Set it with http.SetCookie. A nil
// sess gives nil, which http.SetCookie ignores.
func (s *Store) Cookie(name string, sess *Session) *http.Cookie {
	if sess == nil {
		return nil
	}
	if name == "" {
		name = DefaultCookieName
	}
	age := int(time.Until(sess.AbsoluteExpiry) / time.Second)
	if age < 1 {
		age = 1
	}
	return &http.Cookie{
		Name: name, Value: sess.Handle(), Path: "/", MaxAge: age,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode,
	}
}

// ClearCookie returns a cookie that deletes the session cookie (Max-Age
// -1), with the same attributes as Cookie. An empty name means
// DefaultCookieName.
func ClearCookie(name string) *http.Cookie {
	if name == "" {
		name = DefaultCookieName
	}
	return &http.Cookie{
		Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode,
	}
}
