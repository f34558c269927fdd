package session

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// csrfDomain separates CSRF-token digests from session IDs (idDomain) and
// any other SHA-256 of the same secret.
const csrfDomain = "redschema/session/csrf\x00"

// Names of the CSRF token in a request, as Middleware reads it.
const (
	// defaultCSRFHeader is the request header that carries the CSRF token
	// unless WithCSRFHeader names another.
	defaultCSRFHeader = "X-CSRF-Token"
	// CSRFFormField is the form field read when the header is absent.
	CSRFFormField = "csrf_token"
)

// CSRFToken returns the CSRF token bound to the session of handle: 256
// bits of SHA-256 over a domain string and the handle's secret, in
// unpadded URL-safe base64. It is stored nowhere and costs no round trip;
// it cannot be turned into the handle or the session ID, nor derived
// from the ID that Redis holds; it changes when Renew gives the session a
// new handle. Put it in pages (a form field or a meta tag read by
// scripts): Middleware requires it on unsafe requests that authenticate
// with the cookie. A malformed handle is ErrInvalidToken.
func CSRFToken(handle string) (string, error) {
	if _, _, err := ParseHandle(handle); err != nil {
		return "", err
	}
	sec, _, _ := strings.Cut(handle, ".")
	raw, _ := b64strict.DecodeString(sec)
	return csrfOf(raw), nil
}

func csrfOf(secret []byte) string {
	h := sha256.New()
	h.Write([]byte(csrfDomain))
	h.Write(secret)
	return b64.EncodeToString(h.Sum(nil))
}

// CSRFTokenFromContext returns the CSRF token of the request's session,
// which Middleware puts in the context, or "".
func CSRFTokenFromContext(ctx context.Context) string {
	s, _ := ctx.Value(csrfCtxKey).(string)
	return s
}

// WithCSRFHeader sets the request header that carries the CSRF token
// Middleware checks ("" means "X-CSRF-Token"); the form field
// CSRFFormField is read when the header is absent. A name that is not an
// HTTP token, or WithoutCSRF alongside, makes Middleware panic.
//
// Default: "X-CSRF-Token".
func WithCSRFHeader(name string) MiddlewareOption {
	return func(o *middlewareOptions) { o.csrfHeader = name }
}

// WithoutCSRF turns off Middleware's CSRF check: unsafe requests that
// authenticate with the cookie are served without a token. Use it only
// when nothing else can forge such a request: the cookie never reaches a
// browser, or every route behind the middleware is protected otherwise
// (an Origin check, SameSite=Strict cookies on a site of its own). Bearer
// requests are never checked, with or without it.
//
// Default: off (the CSRF check is on).
func WithoutCSRF() MiddlewareOption {
	return func(o *middlewareOptions) { o.noCSRF = true }
}

// safeMethod reports whether m is a method that must not change state.
func safeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// csrfOK reports whether r carries want in header or in the form field.
func csrfOK(r *http.Request, header, want string) bool {
	got := r.Header.Get(header)
	if got == "" {
		got = r.PostFormValue(CSRFFormField)
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
