package session_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/session"
)

func Example() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	store, err := session.New(rdb) // seed defaults: 1h sliding, 24h cap
	if err != nil {
		panic(err)
	}
	sess, tok, err := store.Create(ctx, session.Info{UserID: "42", Email: "admin@zentoria.local"})
	if err != nil {
		panic(err)
	}
	// The client gets tok.Handle (cookie or bearer) and tok.Refresh; a
	// request presents the handle, which names its user and session.
	userID, sessionID, err := session.ParseHandle(tok.Handle)
	if err != nil {
		panic(err)
	}
	got, err := store.Get(ctx, userID, sessionID) // slides the idle timeout
	if err != nil {
		panic(err)
	}
	fmt.Println("email:", got.Email, "same session:", got.ID == sess.ID)
	fmt.Println("idle timeout left:", rdb.PTTL(ctx, "session:user:{42}:"+sess.ID).Val().Round(time.Minute))
	fmt.Println("handle stored:", strings.Contains(rdb.Keys(ctx, "*").String(), tok.Handle))

	next, err := store.RotateRefresh(ctx, "42", sess.ID, tok.Refresh)
	fmt.Println("rotated:", err == nil, next != tok.Refresh)
	// A client that saw an error retries with the same token: it gets the
	// same new one (within WithRotationGrace), not a revoked session.
	again, err := store.RotateRefresh(ctx, "42", sess.ID, tok.Refresh)
	fmt.Println("retried:", err == nil, again == next)
	if _, err := store.RotateRefresh(ctx, "42", sess.ID, next); err != nil {
		panic(err)
	}
	_, err = store.RotateRefresh(ctx, "42", sess.ID, tok.Refresh) // two rotations old
	fmt.Println("reuse:", errors.Is(err, session.ErrTokenReused))
	_, err = store.Get(ctx, "42", sess.ID)
	fmt.Println("after reuse:", errors.Is(err, session.ErrNotFound))
	// Output:
	// email: admin@zentoria.local same session: true
	// idle timeout left: 1h0m0s
	// handle stored: false
	// rotated: true true
	// retried: true true
	// reuse: true
	// after reuse: true
}

func ExampleStore_Devices() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	store, _ := session.New(rdb)
	laptop, _, _ := store.Create(ctx, session.Info{UserID: "42", IPAddress: "203.0.113.7", UserAgent: "Firefox/128", DeviceFingerprint: "laptop"})
	_, _, _ = store.Create(ctx, session.Info{UserID: "42", IPAddress: "198.51.100.2", UserAgent: "Safari/17", DeviceFingerprint: "phone"})
	ttl := rdb.PTTL(ctx, "session:user:{42}:"+laptop.ID).Val()

	devices, err := store.Devices(ctx, "42") // "where you are signed in"
	if err != nil {
		panic(err)
	}
	// Soonest expiry first; two sessions made in the same millisecond tie.
	sort.Slice(devices, func(i, j int) bool { return devices[i].DeviceFingerprint < devices[j].DeviceFingerprint })
	for _, d := range devices {
		fmt.Println(d.DeviceFingerprint, d.IPAddress, d.UserAgent, d.LastActivity.Equal(d.CreatedAt))
	}
	fmt.Println("slid:", rdb.PTTL(ctx, "session:user:{42}:"+laptop.ID).Val() != ttl)
	// Output:
	// laptop 203.0.113.7 Firefox/128 true
	// phone 198.51.100.2 Safari/17 true
	// slid: false
}

func ExampleStore_Create_rememberMe() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	store, _ := session.New(rdb) // 1h idle, 24h cap for ordinary logins
	// "Remember me" ticked: this session has its own timeouts.
	sess, tok, _ := store.Create(ctx, session.Info{UserID: "42", IdleTimeout: 7 * 24 * time.Hour, MaxLifetime: 30 * 24 * time.Hour})
	age := time.Duration(session.Cookie("", tok.Handle, sess).MaxAge) * time.Second
	fmt.Println("cookie lasts:", age.Round(time.Hour)) // until the session's own absolute expiry
	m.FastForward(2 * time.Hour)                       // idle longer than the Store's 1h
	got, err := store.Get(ctx, "42", sess.ID)
	fmt.Println("still live:", err == nil, "idle timeout:", got.IdleTimeout)
	fmt.Println("slid by its own:", rdb.PTTL(ctx, "session:user:{42}:"+sess.ID).Val().Round(time.Hour))
	// Output:
	// cookie lasts: 720h0m0s
	// still live: true idle timeout: 168h0m0s
	// slid by its own: 168h0m0s
}

// The middleware requires the session's CSRF token on unsafe requests
// that authenticate with the cookie: a forged cross-site form post
// carries the cookie but not the token.
func ExampleCSRFToken() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	store, _ := session.New(rdb)
	sess, tok, _ := store.Create(context.Background(), session.Info{UserID: "42"})

	h := session.Middleware(store)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A page would render session.CSRFTokenFromContext(r.Context())
		// into its forms.
		w.WriteHeader(http.StatusNoContent)
	}))
	post := func(token string) int {
		r := httptest.NewRequest("POST", "/transfer", nil)
		r.AddCookie(session.Cookie("", tok.Handle, sess))
		if token != "" {
			r.Header.Set("X-CSRF-Token", token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	token, _ := session.CSRFToken(tok.Handle)
	fmt.Println("forged:", post(""))
	fmt.Println("with the token:", post(token))
	// Output:
	// forged: 403
	// with the token: 204
}

func ExampleStore_Renew() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	store, _ := session.New(rdb)
	// An anonymous session, whose handle someone may have planted or seen.
	sess, tok, _ := store.Create(ctx, session.Info{UserID: "42", Extra: map[string]string{"cart": "3"}})
	// The user logs in: same session, new ID and credentials.
	renewed, fresh, err := store.Renew(ctx, "42", sess.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("new ID:", renewed.ID != sess.ID, "new handle:", fresh.Handle != tok.Handle)
	fmt.Println("cart kept:", renewed.Extra["cart"])
	uid, sid, _ := session.ParseHandle(tok.Handle)
	_, err = store.Get(ctx, uid, sid)
	fmt.Println("old handle:", errors.Is(err, session.ErrNotFound))
	uid, sid, _ = session.ParseHandle(fresh.Handle)
	_, err = store.Get(ctx, uid, sid)
	fmt.Println("new handle works:", err == nil)
	// Output:
	// new ID: true new handle: true
	// cart kept: 3
	// old handle: true
	// new handle works: true
}

func ExampleStore_RevokeOthers() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	store, _ := session.New(rdb, session.WithMaxSessions(3))
	var ids []string
	for i := 0; i < 4; i++ { // the fourth evicts the least recently active
		s, _, _ := store.Create(ctx, session.Info{UserID: "42"})
		ids = append(ids, s.ID)
	}
	list, _ := store.List(ctx, "42")
	fmt.Println("live sessions:", len(list))

	other := list[0].ID
	if other == ids[3] {
		other = list[1].ID
	}
	ok, _ := store.Revoke(ctx, "42", other) // a listed ID revokes, never authenticates
	fmt.Println("revoked one:", ok)
	n, _ := store.RevokeOthers(ctx, "42", ids[3]) // "log out other devices"
	fmt.Println("revoked the others:", n)
	list, _ = store.List(ctx, "42")
	fmt.Println("kept the current one:", len(list) == 1 && list[0].ID == ids[3])
	// Output:
	// live sessions: 3
	// revoked one: true
	// revoked the others: 1
	// kept the current one: true
}

func ExampleStore_RevokeToken() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	store, _ := session.New(rdb)
	listed, _ := store.RevokeToken(ctx, "jti-1", time.Now().Add(15*time.Minute))
	revoked, _ := store.IsRevoked(ctx, "jti-1")
	fmt.Println("blacklisted:", listed, "revoked:", revoked)
	listed, _ = store.RevokeToken(ctx, "jti-2", time.Now().Add(-time.Minute))
	fmt.Println("expired token blacklisted:", listed)
	_, err := store.RevokeToken(ctx, "jti-3", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	fmt.Println("expiry in 9999:", errors.Is(err, session.ErrInvalid))
	// Output:
	// blacklisted: true revoked: true
	// expired token blacklisted: false
	// expiry in 9999: true
}

func ExampleUsers() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	users, _ := session.NewUsers(rdb, session.WithNamespace(keysHA))
	_, _ = users.Login(ctx, "123", session.LoginInfo{DeviceID: "iPhone_12_ABC123", Anonymous: true})
	u, _ := users.Validate(ctx, "123") // one round trip: status, last_seen, TTL
	fmt.Println(u.Status, "can write:", u.CanWrite())

	_ = users.Block(ctx, "123")
	_, err := users.Validate(ctx, "123")
	fmt.Println("blocked:", errors.Is(err, session.ErrBlocked))
	_ = users.Unblock(ctx, "123")
	u, _ = users.Validate(ctx, "123")
	fmt.Println("unblocked:", u.Status)
	fmt.Println(rdb.HGet(ctx, "ha:user:{123}", "device_id").Val())
	// Output:
	// anonymous can write: false
	// blocked: true
	// unblocked: anonymous
	// iPhone_12_ABC123
}

func ExampleMiddleware() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	store, _ := session.New(rdb)
	h := session.Middleware(store)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello", session.FromContext(r.Context()).Email)
	}))
	sess, tok, _ := store.Create(context.Background(), session.Info{UserID: "42", Email: "a@example.com"})

	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(session.Cookie("", tok.Handle, sess))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Body.String())

	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	fmt.Println(w.Code)
	// Output:
	// 200 hello a@example.com
	// 401
}

var keysHA = keys.Namespace{Prefix: "ha:"}

// Lifecycle events: each session's creation and its one end, read from
// the events streams with a resumable cursor.
func ExampleStore_NewEventReader() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	store, err := session.New(rdb, session.WithEvents(10000), session.WithMaxSessions(1))
	if err != nil {
		panic(err)
	}
	// In production a sweeper announces the expiries no call notices:
	// go store.RunSweeper(ctx, time.Second, 1024, logError)
	reader := store.NewEventReader(time.Time{}) // from the oldest kept
	first, _, _ := store.Create(ctx, session.Info{UserID: "42"})
	second, _, _ := store.Create(ctx, session.Info{UserID: "42"}) // evicts first
	if _, err := store.Revoke(ctx, "42", second.ID); err != nil {
		panic(err)
	}
	name := map[string]string{first.ID: "first", second.ID: "second"}
	events, err := reader.Read(ctx)
	if err != nil {
		panic(err)
	}
	for _, ev := range events {
		fmt.Printf("%s %s (%s), user %s\n", name[ev.SessionID], ev.Kind, ev.Reason, ev.UserID)
	}
	cursor := reader.Cursor() // save it; ResumeEventReader(cursor) goes on from here
	again, _ := store.ResumeEventReader(cursor)
	more, _ := again.Read(ctx)
	fmt.Println("more:", len(more))
	// Output:
	// first created (create), user 42
	// second created (create), user 42
	// first evicted (max sessions), user 42
	// second revoked (revoke), user 42
	// more: 0
}

// An admin page lists the users with the most sessions through an
// Inspector built with the Store's options.
func ExampleNewInspector() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	store, err := session.New(rdb)
	if err != nil {
		panic(err)
	}
	for _, u := range []string{"42", "7", "42"} {
		if _, _, err := store.Create(ctx, session.Info{UserID: u}); err != nil {
			panic(err)
		}
	}
	in, err := session.NewInspector(rdb)
	if err != nil {
		panic(err)
	}
	users, err := in.IndexedUsers(ctx, 10)
	if err != nil {
		panic(err)
	}
	for _, u := range users {
		fmt.Println(u.ID, u.Entries)
	}
	// Output:
	// 42 2
	// 7 1
}
