package session

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMiddleware(t *testing.T) {
	e, s := newStore(t)
	ctx := e.Ctx()
	users, err := NewUsers(e.Client, WithNamespace(e.NS))
	require.NoError(t, err)
	sess, tok := mustCreateTokens(t, e, s, "alice")
	_, err = users.Login(ctx, "alice", LoginInfo{DeviceID: "d"})
	require.NoError(t, err)

	var seen *Session
	var seenUser *User
	h := Middleware(s, WithUsers(users))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = FromContext(r.Context())
		seenUser = UserFromContext(r.Context())
		w.WriteHeader(http.StatusNoContent)
	}))
	do := func(mod func(*http.Request)) int {
		seen, seenUser = nil, nil
		r := httptest.NewRequest("GET", "/", nil)
		mod(r)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	cookie := Cookie("", tok.Handle, sess)
	assert.True(t, cookie.HttpOnly)
	assert.True(t, cookie.Secure)
	assert.Equal(t, http.SameSiteLaxMode, cookie.SameSite)
	assert.Equal(t, "/", cookie.Path)
	assert.Equal(t, defaultCookieName, cookie.Name)
	assert.InDelta(t, defaultLifetime.Seconds(), float64(cookie.MaxAge), 5)

	assert.Equal(t, 204, do(func(r *http.Request) { r.AddCookie(cookie) }))
	require.NotNil(t, seen)
	assert.Equal(t, sess.ID, seen.ID)
	require.NotNil(t, seenUser)
	assert.True(t, seenUser.CanWrite())
	assert.Equal(t, 204, do(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok.Handle) }))
	assert.Equal(t, sess.ID, seen.ID)

	unknown, _, err := newHandle("alice")
	require.NoError(t, err)
	secret, _, _ := strings.Cut(tok.Handle, ".")
	bearer := func(h string) func(r *http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+h) }
	}
	for name, mod := range map[string]func(*http.Request){
		"none":          func(r *http.Request) {},
		"garbage":       bearer("garbage"),
		"basic":         func(r *http.Request) { r.Header.Set("Authorization", "Basic eDp5") },
		"unknown":       bearer(unknown),
		"other user":    bearer(secret + "." + b64.EncodeToString([]byte("bob"))),
		"listed ID":     bearer(sess.ID),
		"ID as handle":  bearer(sess.ID + "." + b64.EncodeToString([]byte("alice"))),
		"cookie broken": func(r *http.Request) { r.AddCookie(&http.Cookie{Name: defaultCookieName, Value: "x.y"}) },
	} {
		assert.Equal(t, 401, do(mod), name)
		assert.Nil(t, seen, name)
	}

	require.NoError(t, users.Block(ctx, "alice"))
	assert.Equal(t, 401, do(func(r *http.Request) { r.AddCookie(cookie) }), "blocked")
	require.NoError(t, users.Unblock(ctx, "alice"))
	assert.Equal(t, 204, do(func(r *http.Request) { r.AddCookie(cookie) }))

	_, err = s.RevokeAll(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, 401, do(func(r *http.Request) { r.AddCookie(cookie) }), "revoked")

	assert.Nil(t, Cookie("", tok.Handle, nil), "no session, no cookie (and no panic)")
	assert.Nil(t, Cookie("", "", sess), "no handle, no cookie")
	clear := ClearCookie("")
	assert.Equal(t, -1, clear.MaxAge)
	assert.True(t, clear.HttpOnly && clear.Secure)
}

func TestMiddlewareExpiredAndUnavailable(t *testing.T) {
	t.Parallel()
	e, s := newStore(t, WithIdleTimeout(time.Second), WithMaxLifetime(time.Second))
	sess, tok := mustCreateTokens(t, e, s, "alice")
	h := Middleware(s)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(Cookie("", tok.Handle, sess))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, 200, w.Code)
	e.Advance(1100 * time.Millisecond)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, 401, w.Code, "expired")

	c, p := e.ProxyClient(&redis.Options{MaxRetries: -1, ContextTimeoutEnabled: true})
	broken, err := New(c, WithNamespace(e.NS))
	require.NoError(t, err)
	p.Stall()
	defer p.Resume()
	h = Middleware(broken)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	w = httptest.NewRecorder()
	rctx, cancel := context.WithTimeout(r.Context(), 200*time.Millisecond)
	defer cancel()
	h.ServeHTTP(w, r.WithContext(rctx))
	assert.Equal(t, 503, w.Code, "store unreachable")
}

func FuzzParseSession(f *testing.F) {
	f.Add("user_id", "u", "created_at", "2026-01-16T10:00:00Z", "absolute_expiry", "123")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		_, _ = parseSession("u", "s", []string{k1, v1, k2, v2, k3, v3, "last_activity", v2})
		_, _ = parseUser("u", []string{k1, v1, k2, v2, k3, v3})
	})
}

func TestMiddlewareOptions(t *testing.T) {
	e, s := newStore(t)
	sess, tok := mustCreateTokens(t, e, s, "alice")
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for name, opts := range map[string][]MiddlewareOption{
		"defaults":         nil,
		"empty name":       {WithCookieName(""), WithUsers(nil)},
		"custom name":      {WithCookieName("sid")},
		"nil option skips": {nil},
	} {
		h := Middleware(s, opts...)(ok)
		r := httptest.NewRequest("GET", "/", nil)
		cookie := defaultCookieName
		if name == "custom name" {
			cookie = "sid"
		}
		r.AddCookie(Cookie(cookie, tok.Handle, sess))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		assert.Equal(t, 200, w.Code, name)
	}
	for name, f := range map[string]func(){
		"nil store":       func() { Middleware(nil) },
		"bad cookie name": func() { Middleware(s, WithCookieName("a b")) },
		"separator":       func() { Middleware(s, WithCookieName("a;b")) },
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
