package main

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/session"
)

// adminPassword is the demo admins' password. A real service keeps its
// accounts in its database, with a slow password hash (bcrypt, argon2).
const adminPassword = "admin-demo"

// account is one registered user of the service.
type account struct {
	salt, hash []byte
	admin      bool
}

// accounts is the service's user database (in memory here).
type accounts struct {
	mu sync.Mutex
	by map[string]account
}

func newAccounts() *accounts {
	a := &accounts{by: map[string]account{}}
	for _, id := range []string{"ann", "bob"} {
		a.add(id, adminPassword, true)
	}
	return a
}

func digest(salt []byte, password string) []byte {
	h := sha256.Sum256(append(append([]byte(nil), salt...), password...))
	return h[:]
}

// add registers id; it reports false if the ID is taken.
func (a *accounts) add(id, password string, admin bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.by[id]; ok {
		return false
	}
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	a.by[id] = account{salt: salt, hash: digest(salt, password), admin: admin}
	return true
}

// check returns the account when the password is right.
func (a *accounts) check(id, password string) (account, bool) {
	a.mu.Lock()
	acc, ok := a.by[id]
	a.mu.Unlock()
	if !ok || subtle.ConstantTimeCompare(digest(acc.salt, password), acc.hash) != 1 {
		return account{}, false
	}
	return acc, true
}

// admins lists the admin accounts: the support team.
func (a *accounts) admins() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for id, acc := range a.by {
		if acc.admin {
			out = append(out, id)
		}
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// clientIP is the client address as the rate limiter keys it.
var clientIP = ratelimit.ClientIP()

func (a *app) health(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, map[string]string{"status": "ok"}, nil)
}

// register creates an account: {"user_id","password"}.
func (a *app) register(w http.ResponseWriter, r *http.Request) {
	var in struct {
		UserID   string `json:"user_id"`
		Password string `json:"password"`
	}
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	if in.UserID == "" || len(in.UserID) > 64 || len(in.Password) < 8 {
		reply(w, 0, nil, errStatus(http.StatusBadRequest, "user_id (1-64 bytes) and password (8 bytes or more) required"))
		return
	}
	if !a.accounts.add(in.UserID, in.Password, false) {
		reply(w, 0, nil, errStatus(http.StatusConflict, "user_id taken"))
		return
	}
	reply(w, http.StatusCreated, map[string]string{"user_id": in.UserID}, nil)
}

// login starts a session on one device. {"user_id","password","device_id"}
// logs an account in (status login); {"device_id","anonymous":true} gives
// a guest a read-only record (status anonymous). A blocked user stays
// blocked. Attempts on one account are limited by a sliding window, before
// the password is checked.
func (a *app) login(w http.ResponseWriter, r *http.Request) {
	var in struct {
		UserID    string `json:"user_id"`
		Password  string `json:"password"`
		DeviceID  string `json:"device_id"`
		Anonymous bool   `json:"anonymous"`
	}
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	if in.DeviceID == "" {
		reply(w, 0, nil, errStatus(http.StatusBadRequest, "device_id required"))
		return
	}
	ctx := r.Context()
	userID, role := "guest-"+randomHex(6), ""
	if !in.Anonymous {
		res, err := a.perAccount.Allow(ctx, in.UserID)
		if err != nil {
			reply(w, 0, nil, err)
			return
		}
		if !res.Allowed {
			w.Header().Set("Retry-After", strconv.Itoa(int((res.RetryAfter+time.Second-1)/time.Second)))
			reply(w, 0, nil, errStatus(http.StatusTooManyRequests, "too many login attempts for %s: retry in %s", in.UserID, res.RetryAfter.Round(time.Second)))
			return
		}
		acc, ok := a.accounts.check(in.UserID, in.Password)
		if !ok {
			reply(w, 0, nil, errStatus(http.StatusUnauthorized, "wrong user or password"))
			return
		}
		userID = in.UserID
		if acc.admin {
			role = "admin"
		}
	}
	ip, _ := clientIP(r)
	u, err := a.users.Login(ctx, userID, session.LoginInfo{DeviceID: in.DeviceID, IPAddress: ip, Anonymous: in.Anonymous})
	if err != nil {
		reply(w, 0, nil, err) // ErrBlocked: 403
		return
	}
	info := session.Info{UserID: userID, IPAddress: ip, UserAgent: r.UserAgent(), DeviceFingerprint: in.DeviceID}
	if role != "" {
		info.Extra = map[string]string{"role": role}
	}
	sess, tok, err := a.sessions.Create(ctx, info)
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	http.SetCookie(w, session.Cookie("", tok.Handle, sess))
	reply(w, http.StatusOK, map[string]any{
		"user_id": userID, "status": u.Status, "token": tok.Handle, "expires_at": sess.ExpiresAt,
	}, nil)
}

// logout ends this device's session at once.
func (a *app) logout(w http.ResponseWriter, r *http.Request) {
	s := session.FromContext(r.Context())
	if _, err := a.sessions.Revoke(r.Context(), s.UserID, s.ID); err != nil {
		reply(w, 0, nil, err)
		return
	}
	http.SetCookie(w, session.ClearCookie(""))
	reply(w, http.StatusOK, map[string]bool{"logged_out": true}, nil)
}

// me shows the user record (ha:user:{id}) and the session.
func (a *app) me(w http.ResponseWriter, r *http.Request) {
	s, u := session.FromContext(r.Context()), session.UserFromContext(r.Context())
	reply(w, http.StatusOK, map[string]any{
		"user_id": u.ID, "status": u.Status, "device_id": u.DeviceID, "ip_address": u.IPAddress,
		"login_time": u.LoginTime, "last_seen": u.LastSeen, "session_expires_at": s.ExpiresAt, "admin": isAdmin(s),
	}, nil)
}

func isAdmin(s *session.Session) bool { return s != nil && s.Extra["role"] == "admin" }

// requireWrite lets only status "login" through: anonymous users may
// view, not write (seed 000 §4).
func requireWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := session.UserFromContext(r.Context()); u == nil || !u.CanWrite() {
			reply(w, 0, nil, errStatus(http.StatusForbidden, "read-only (anonymous) user"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireAdmin lets only admin sessions through.
func requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isAdmin(session.FromContext(r.Context())) {
			reply(w, 0, nil, errStatus(http.StatusForbidden, "admins only"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sessionUser keys a rate limit by the session's user (after the session
// middleware).
func sessionUser(r *http.Request) (string, error) {
	if s := session.FromContext(r.Context()); s != nil {
		return s.UserID, nil
	}
	return "", ratelimit.ErrNoKey
}
