package session

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/redschema/redschema/internal/route"
)

// defaultCookieName is the cookie the middleware and Cookie use when no
// name is given.
const defaultCookieName = "session"

type ctxKey int

const (
	sessionCtxKey ctxKey = iota
	userCtxKey
	csrfCtxKey
)

// FromContext returns the session the middleware put in ctx, or nil.
func FromContext(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionCtxKey).(*Session)
	return s
}

// UserFromContext returns the user record the middleware put in ctx (with
// WithUsers), or nil.
func UserFromContext(ctx context.Context) *User {
	u, _ := ctx.Value(userCtxKey).(*User)
	return u
}

// MiddlewareOption configures Middleware. The zero configuration (no
// options) reads the handle from the bearer header or the cookie
// "session", checks the CSRF token of unsafe requests that
// authenticate with the cookie (header X-CSRF-Token or form field
// CSRFFormField), and does not check user records.
type MiddlewareOption func(*middlewareOptions)

type middlewareOptions struct {
	cookie     string
	users      *Users
	csrfHeader string // WithCSRFHeader; "" means defaultCSRFHeader
	noCSRF     bool   // WithoutCSRF
}

// WithCookieName sets the cookie that holds the session handle; "" means
// "session". A name that is not a valid cookie name (RFC 6265
// token) makes Middleware panic.
//
// Default: "session".
func WithCookieName(name string) MiddlewareOption {
	return func(o *middlewareOptions) { o.cookie = name }
}

// WithUsers also validates the user record of the session's user, in the
// same script and round trip (Store.Authenticate): a blocked or missing
// record is 401, and the record is put in the request context
// (UserFromContext). nil checks no user record.
//
// Default: nil (no user record checked).
func WithUsers(u *Users) MiddlewareOption { return func(o *middlewareOptions) { o.users = u } }

// Middleware returns net/http middleware that authenticates each request
// against store. The session handle (Tokens.Handle, from Create) is read from
// "Authorization: Bearer <handle>" or, without that header, from the
// cookie (any other Authorization scheme is 401). The session is loaded
// and slid with Get, or Authenticate with WithUsers (one round trip
// either way, unless hash tags are off: see Authenticate), and put in the
// request context (FromContext), with the session's CSRF token
// (CSRFTokenFromContext). A missing, malformed, expired, revoked or
// blocked session is answered 401 Unauthorized; a Redis failure or
// corrupt data 503 Service Unavailable.
//
// CSRF: a request that authenticates with the cookie and whose method is
// not safe (anything but GET, HEAD, OPTIONS and TRACE) must carry its
// session's CSRF token (CSRFToken, CSRFTokenFromContext) in the header
// X-CSRF-Token (or WithCSRFHeader's) or, without that header, in the
// form field CSRFFormField; otherwise it is answered 403 Forbidden before
// the store is called. Requests with "Authorization: Bearer" are not
// checked: a browser never adds that header by itself, so a forged
// cross-site request cannot carry it. WithoutCSRF turns the check off.
//
// The handler gets a copy of the request (with the session in its
// context); the pattern an http.ServeMux behind the middleware matches is
// copied back onto the request the middleware received when the handler
// returns, so a metrics middleware outside this one still labels the
// request by its route.
//
// Middleware panics, with an error matching ErrInvalid, on a nil store or
// an invalid option: a configuration mistake, found at start-up.
func Middleware(store *Store, opts ...MiddlewareOption) func(http.Handler) http.Handler {
	o := middlewareOptions{}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	if o.cookie == "" {
		o.cookie = defaultCookieName
	}
	const op = "middleware"
	switch {
	case store == nil:
		panic(pkg.Invalidf(op, "nil Store"))
	case !validCookieName(o.cookie):
		panic(pkg.Invalidf(op, "cookie name %q is not an RFC 6265 token", o.cookie))
	case o.noCSRF && o.csrfHeader != "":
		panic(pkg.Invalidf(op, "WithoutCSRF and WithCSRFHeader(%q) together", o.csrfHeader))
	case o.csrfHeader != "" && !validCookieName(o.csrfHeader):
		panic(pkg.Invalidf(op, "CSRF header name %q is not an HTTP token", o.csrfHeader))
	}
	csrfHeader := ""
	if !o.noCSRF {
		csrfHeader = cmp.Or(o.csrfHeader, defaultCSRFHeader)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h, fromCookie := handleFrom(r, o.cookie)
			if h == "" {
				unauthorized(w)
				return
			}
			userID, sid, err := ParseHandle(h)
			if err != nil {
				unauthorized(w)
				return
			}
			raw, _ := b64strict.DecodeString(h[:strings.IndexByte(h, '.')])
			csrf := csrfOf(raw)
			if csrfHeader != "" && fromCookie && !safeMethod(r.Method) && !csrfOK(r, csrfHeader, csrf) {
				http.Error(w, "missing or wrong CSRF token", http.StatusForbidden)
				return
			}
			ctx := r.Context()
			var sess *Session
			var usr *User
			if o.users != nil {
				sess, usr, err = store.Authenticate(ctx, o.users, userID, sid)
			} else {
				sess, err = store.Get(ctx, userID, sid)
			}
			if err != nil {
				fail(w, err)
				return
			}
			ctx = context.WithValue(ctx, sessionCtxKey, sess)
			ctx = context.WithValue(ctx, csrfCtxKey, csrf)
			if usr != nil {
				ctx = context.WithValue(ctx, userCtxKey, usr)
			}
			route.Serve(next, w, r, r.WithContext(ctx))
		})
	}
}

// validCookieName reports whether name is an RFC 6265 cookie name (an RFC
// 2616 token).
func validCookieName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

// handleFrom returns the presented handle and whether it came from the
// cookie.
func handleFrom(r *http.Request, cookie string) (string, bool) {
	if a := r.Header.Get("Authorization"); a != "" {
		const p = "Bearer "
		if len(a) > len(p) && strings.EqualFold(a[:len(p)], p) {
			return strings.TrimSpace(a[len(p):]), false
		}
		return "", false
	}
	if c, err := r.Cookie(cookie); err == nil {
		return c.Value, true
	}
	return "", false
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="session"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
}

func fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrBlocked), errors.Is(err, ErrInvalid), errors.Is(err, ErrInvalidToken):
		unauthorized(w)
	default:
		http.Error(w, "session store unavailable", http.StatusServiceUnavailable)
	}
}
