package session

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// By default, an unsafe request authenticated by the cookie passes only
// with its own session's CSRF token (header or form field); safe methods
// and bearer requests need none; the token changes with Renew.
func TestMiddlewareCSRF(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	sess, tok := mustCreateTokens(t, e, s, "alice")
	_, other := mustCreateTokens(t, e, s, "alice")

	var seenToken string
	var calls int
	h := Middleware(s)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		seenToken = CSRFTokenFromContext(r.Context())
		w.WriteHeader(http.StatusNoContent)
	}))
	do := func(method, handle string, cookie bool, mod func(*http.Request)) int {
		r := httptest.NewRequest(method, "/", nil)
		if cookie {
			r.AddCookie(Cookie("", handle, sess))
		} else {
			r.Header.Set("Authorization", "Bearer "+handle)
		}
		if mod != nil {
			mod(r)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	want, err := CSRFToken(tok.Handle)
	require.NoError(t, err)
	header := func(v string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set(defaultCSRFHeader, v) }
	}
	form := func(v string) func(*http.Request) {
		return func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(url.Values{CSRFFormField: {v}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}

	assert.Equal(t, 204, do("GET", tok.Handle, true, nil), "safe method")
	assert.Equal(t, want, seenToken, "the token is in the request context")
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		before := calls
		assert.Equal(t, 403, do(m, tok.Handle, true, nil), m+" without a token")
		assert.Equal(t, 403, do(m, tok.Handle, true, header(wrongFirst(want))), m+" with a wrong token")
		otherToken, err := CSRFToken(other.Handle)
		require.NoError(t, err)
		assert.Equal(t, 403, do(m, tok.Handle, true, header(otherToken)), m+" with another session's token")
		assert.Equal(t, before, calls, "refused before the handler")
		assert.Equal(t, 204, do(m, tok.Handle, true, header(want)), m+" with the header")
		assert.Equal(t, 204, do(m, tok.Handle, false, nil), m+" with a bearer handle needs no token")
	}
	assert.Equal(t, 204, do("POST", tok.Handle, true, form(want)), "form field")
	assert.Equal(t, 403, do("POST", tok.Handle, true, form("nope")), "wrong form field")

	// Renew: a new handle, a new token; the old token no longer matches.
	_, fresh, err := s.Renew(ctx, "alice", sess.ID)
	require.NoError(t, err)
	newToken, err := CSRFToken(fresh.Handle)
	require.NoError(t, err)
	assert.NotEqual(t, want, newToken)
	assert.Equal(t, 403, do("POST", fresh.Handle, true, header(want)))
	assert.Equal(t, 204, do("POST", fresh.Handle, true, header(newToken)))
	assert.Equal(t, 401, do("POST", tok.Handle, true, header(want)), "the old session is gone")

	// The token reveals neither the handle's secret nor the session ID.
	secret, _, _ := strings.Cut(tok.Handle, ".")
	assert.NotContains(t, want, secret)
	assert.NotEqual(t, sess.ID, want[:idLen])

	_, err = CSRFToken("not a handle")
	require.ErrorIs(t, err, ErrInvalidToken)
	assert.NotContains(t, err.Error(), "not a handle")
}

// WithoutCSRF checks nothing, and the token is still in the context;
// WithCSRFHeader moves the token to another header (the form field
// still works); the two together, or a header name that is not a token,
// make Middleware panic.
func TestMiddlewareCSRFOptions(t *testing.T) {
	e, s := newStore(t)
	sess, tok := mustCreateTokens(t, e, s, "alice")
	want, err := CSRFToken(tok.Handle)
	require.NoError(t, err)
	var seen string
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = CSRFTokenFromContext(r.Context())
	})
	do := func(h http.Handler, mod func(*http.Request)) int {
		r := httptest.NewRequest("POST", "/", nil)
		r.AddCookie(Cookie("", tok.Handle, sess))
		if mod != nil {
			mod(r)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}

	assert.Equal(t, 200, do(Middleware(s, WithoutCSRF())(ok), nil), "WithoutCSRF")
	assert.Equal(t, want, seen)

	custom := Middleware(s, WithCSRFHeader("X-XSRF-Token"))(ok)
	assert.Equal(t, 403, do(custom, nil), "no token")
	assert.Equal(t, 403, do(custom, func(r *http.Request) { r.Header.Set(defaultCSRFHeader, want) }), "the default header is not read")
	assert.Equal(t, 200, do(custom, func(r *http.Request) { r.Header.Set("X-XSRF-Token", want) }), "the custom header")
	assert.Equal(t, 200, do(custom, func(r *http.Request) {
		r.Body = io.NopCloser(strings.NewReader(url.Values{CSRFFormField: {want}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}), "the form field")
	assert.Equal(t, 200, do(Middleware(s, WithCSRFHeader(""))(ok), func(r *http.Request) { r.Header.Set(defaultCSRFHeader, want) }), `"" is the default`)

	for name, f := range map[string]func(){
		"both":     func() { Middleware(s, WithoutCSRF(), WithCSRFHeader("X-A")) },
		"bad name": func() { Middleware(s, WithCSRFHeader("X A")) },
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				require.ErrorIs(t, err, ErrInvalid, name)
			}()
			f()
			t.Errorf("%s: no panic", name)
		}()
	}
}

// wrongFirst returns tok with its first character changed (to 'x', or to
// 'y' when it is an 'x': a token starting with 'x' once made the "wrong"
// token the right one).
func wrongFirst(tok string) string {
	if tok[0] == 'x' {
		return "y" + tok[1:]
	}
	return "x" + tok[1:]
}
