package session

import (
	"context"
	"net/http"
	"net/http/httptest"
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
	sess, _ := mustCreate(t, e, s, "alice")
	_, err = users.Login(ctx, "alice", LoginInfo{DeviceID: "d"})
	require.NoError(t, err)

	var seen *Session
	var seenUser *User
	h := s.Middleware(&MiddlewareOptions{Users: users})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	cookie := s.Cookie("", sess)
	assert.True(t, cookie.HttpOnly)
	assert.True(t, cookie.Secure)
	assert.Equal(t, http.SameSiteLaxMode, cookie.SameSite)
	assert.Equal(t, "/", cookie.Path)
	assert.Equal(t, DefaultCookieName, cookie.Name)
	assert.InDelta(t, DefaultMaxLifetime.Seconds(), float64(cookie.MaxAge), 5)

	assert.Equal(t, 204, do(func(r *http.Request) { r.AddCookie(cookie) }))
	require.NotNil(t, seen)
	assert.Equal(t, sess.ID, seen.ID)
	require.NotNil(t, seenUser)
	assert.True(t, seenUser.CanWrite())
	assert.Equal(t, 204, do(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+sess.Handle()) }))
	assert.Equal(t, sess.ID, seen.ID)

	for name, mod := range map[string]func(*http.Request){
		"none":    func(r *http.Request) {},
		"garbage": func(r *http.Request) { r.Header.Set("Authorization", "Bearer garbage") },
		"basic":   func(r *http.Request) { r.Header.Set("Authorization", "Basic eDp5") },
		"unknown": func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+EncodeHandle("alice", "AAAAAAAAAAAAAAAAAAAAAA"))
		},
		"other user":    func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+EncodeHandle("bob", sess.ID)) },
		"cookie broken": func(r *http.Request) { r.AddCookie(&http.Cookie{Name: DefaultCookieName, Value: "x.y"}) },
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

	assert.Nil(t, s.Cookie("", nil), "no session, no cookie (and no panic)")
	clear := ClearCookie("")
	assert.Equal(t, -1, clear.MaxAge)
	assert.True(t, clear.HttpOnly && clear.Secure)
}

func TestMiddlewareExpiredAndUnavailable(t *testing.T) {
	t.Parallel()
	e, s := newStore(t, WithIdleTimeout(time.Second), WithMaxLifetime(time.Second))
	sess, _ := mustCreate(t, e, s, "alice")
	h := s.Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(s.Cookie("", sess))
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
	h = broken.Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	w = httptest.NewRecorder()
	rctx, cancel := context.WithTimeout(r.Context(), 200*time.Millisecond)
	defer cancel()
	h.ServeHTTP(w, r.WithContext(rctx))
	assert.Equal(t, 503, w.Code, "store unreachable")
}

func TestHandle(t *testing.T) {
	for _, uid := range []string{"42", "user:with:colons", "a.b.c", "ü/é"} {
		id, err := NewID()
		require.NoError(t, err)
		h := EncodeHandle(uid, id)
		gotUID, gotID, err := ParseHandle(h)
		require.NoError(t, err)
		assert.Equal(t, uid, gotUID)
		assert.Equal(t, id, gotID)
	}
	for _, h := range []string{"", ".", "abc", "AAAAAAAAAAAAAAAAAAAAAA.", ".NDI", "AAAA.NDI", "AAAAAAAAAAAAAAAAAAAAAA.!!",
		"AAAAAAAAAAAAAAAAAAAAAA.NDJ", "AAAAAAAAAAAAAAAAAAAAAB.NDI"} { // non-canonical spellings of a valid handle
		_, _, err := ParseHandle(h)
		require.ErrorIs(t, err, ErrInvalidToken, h)
	}
}

func FuzzParseHandle(f *testing.F) {
	f.Add(EncodeHandle("42", "AAAAAAAAAAAAAAAAAAAAAA"))
	f.Add("x.y")
	f.Add("AAAAAAAAAAAAAAAAAAAAAB.NDJ")
	f.Fuzz(func(t *testing.T, h string) {
		uid, sid, err := ParseHandle(h)
		if err != nil {
			return
		}
		if EncodeHandle(uid, sid) != h {
			t.Fatalf("round trip of %q gave %q", h, EncodeHandle(uid, sid))
		}
	})
}

func FuzzParseSession(f *testing.F) {
	f.Add("user_id", "u", "created_at", "2026-01-16T10:00:00Z", "absolute_expiry", "123")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		_, _ = parseSession("k", "u", "s", []string{k1, v1, k2, v2, k3, v3, "last_activity", v2})
		_, _ = parseUser("k", "u", []string{k1, v1, k2, v2, k3, v3})
	})
}
