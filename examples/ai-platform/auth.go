package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/redschema/redschema/pubsub"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/session"
)

// adminPassword is the demo accounts' password. A real service keeps its
// accounts in its database, with a slow password hash (bcrypt, argon2).
const adminPassword = "zentoria-demo"

// accessTTL is the lifetime of a JWT access token.
const accessTTL = 15 * time.Minute

// account is one user of the platform.
type account struct {
	ID, Email, Role string
	salt, hash      []byte
}

// accounts is the platform's user database (in memory here).
type accounts struct{ byEmail map[string]account }

func newAccounts() *accounts {
	a := &accounts{byEmail: map[string]account{}}
	for _, u := range []account{
		{ID: "6f1c2a7e-0b1d-4c55-9e7a-3d2f8b9c1a01", Email: "admin@zentoria.local", Role: "admin"},
		{ID: "0c9d8e7f-6a5b-4c3d-2e1f-0a9b8c7d6e02", Email: "dana@zentoria.local", Role: "user"},
	} {
		u.salt = []byte(u.ID)
		u.hash = digest(u.salt, adminPassword)
		a.byEmail[u.Email] = u
	}
	return a
}

func digest(salt []byte, secret string) []byte {
	h := sha256.Sum256(append(append([]byte(nil), salt...), secret...))
	return h[:]
}

func (a *accounts) check(email, password string) (account, bool) {
	acc, ok := a.byEmail[email]
	if !ok || subtle.ConstantTimeCompare(digest(acc.salt, password), acc.hash) != 1 {
		return account{}, false
	}
	return acc, true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// claims are a JWT access token's: the user, the session it was issued
// for, its ID (what the blacklist names) and its lifetime.
type claims struct {
	Sub  string `json:"sub"`
	Sid  string `json:"sid"`
	Jti  string `json:"jti"`
	Role string `json:"role,omitempty"`
	Iat  int64  `json:"iat"`
	Exp  int64  `json:"exp"`
}

// signer makes and checks HS256 JWTs.
type signer struct{ key []byte }

func newSigner() signer {
	key := make([]byte, 32) // per process; set one shared secret for several instances
	_, _ = rand.Read(key)
	return signer{key: key}
}

var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

func (s signer) sign(c claims) string {
	body, _ := json.Marshal(c)
	msg := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(body)
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(msg))
	return msg + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

var errBadToken = errors.New("invalid or expired access token")

func (s signer) verify(tok string, now time.Time) (claims, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != jwtHeader {
		return claims{}, errBadToken
	}
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return claims{}, errBadToken
	}
	var c claims
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(body, &c) != nil || c.Jti == "" || now.Unix() >= c.Exp {
		return claims{}, errBadToken
	}
	return c, nil
}

// issue returns a fresh access token for a session.
func (p *platform) issue(userID, sessionID, role string) (string, claims) {
	now := time.Now()
	c := claims{Sub: userID, Sid: sessionID, Jti: randomHex(12), Role: role, Iat: now.Unix(), Exp: now.Add(accessTTL).Unix()}
	return p.jwt.sign(c), c
}

// keyring holds API keys by the digest of their secret (in memory here):
// the secret is shown once, never stored.
type keyring struct {
	mu       sync.Mutex
	byDigest map[string]apiKey
}

type apiKey struct{ ID, UserID, Role string }

func newKeyring() *keyring { return &keyring{byDigest: map[string]apiKey{}} }

func keyDigest(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// principal is who a request acts for: a user through a JWT, or through
// one of the user's API keys.
type principal struct {
	UserID, Role string
	Claims       claims // JWT requests
	KeyID        string // API key requests
}

type principalKey struct{}

func principalOf(r *http.Request) principal {
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}

func principalUser(r *http.Request) string { return principalOf(r).UserID }

// authenticate accepts "X-API-Key: <key>" or "Authorization: Bearer <JWT>";
// a JWT must carry a valid signature, be unexpired and not be on the
// blacklist (one GET on DB 0).
func (p *platform) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var who principal
		if secret := r.Header.Get("X-API-Key"); secret != "" {
			p.keyring.mu.Lock()
			k, ok := p.keyring.byDigest[keyDigest(secret)]
			p.keyring.mu.Unlock()
			if !ok {
				reply(w, 0, nil, errStatus(http.StatusUnauthorized, "unknown API key"))
				return
			}
			who = principal{UserID: k.UserID, Role: k.Role, KeyID: k.ID}
		} else {
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			c, err := p.jwt.verify(tok, time.Now())
			if !ok || err != nil {
				reply(w, 0, nil, errStatus(http.StatusUnauthorized, "%v", errBadToken))
				return
			}
			revoked, err := p.sessions.IsRevoked(r.Context(), c.Jti)
			if err != nil {
				reply(w, 0, nil, err)
				return
			}
			if revoked {
				reply(w, 0, nil, errStatus(http.StatusUnauthorized, "access token revoked"))
				return
			}
			who = principal{UserID: c.Sub, Role: c.Role, Claims: c}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, who)))
	})
}

// limitAPIKeys applies the per-API-key limits (with the key's runtime
// config) to API key requests; users with a JWT are not limited here.
func (p *platform) limitAPIKeys(next http.Handler) http.Handler {
	limited := ratelimit.Middleware(p.perKey,
		ratelimit.WithKey(func(r *http.Request) (string, error) { return principalOf(r).KeyID, nil }),
		ratelimit.WithOnError(func(r *http.Request, err error) { p.log.Printf("rate limit: %v", err) }))(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if principalOf(r).KeyID != "" {
			limited.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if principalOf(r).Role != "admin" {
			reply(w, 0, nil, errStatus(http.StatusForbidden, "admins only"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// auditEvent publishes on pubsub:audit:event.
func (p *platform) auditEvent(ctx context.Context, action, resource, user string) {
	publish(ctx, p, pubsub.TopicAuditEvent(), pubsub.AuditEvent{Action: action, Resource: resource, User: user})
}

// tokens is what login and refresh answer.
type tokens struct {
	UserID       string    `json:"user_id"`
	Session      string    `json:"session"`       // the session handle: for refresh only
	RefreshToken string    `json:"refresh_token"` // rotated by every refresh
	AccessToken  string    `json:"access_token"`  // the JWT for every API call
	ExpiresAt    time.Time `json:"expires_at"`
}

// login checks {"email","password"} (limited per client IP) and starts a
// session: a session handle and refresh token for /auth/refresh, and a JWT.
func (p *platform) login(w http.ResponseWriter, r *http.Request) {
	ip, err := ratelimit.ClientIP()(r)
	if err != nil {
		reply(w, 0, nil, errStatus(http.StatusBadRequest, "%v", err))
		return
	}
	res, err := p.perIP.Allow(r.Context(), ip)
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	if !res.Allowed {
		reply(w, 0, nil, errStatus(http.StatusTooManyRequests, "too many logins from %s, retry in %s", ip, res.RetryAfter.Round(time.Second)))
		return
	}
	var in struct{ Email, Password string }
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	acc, ok := p.accounts.check(in.Email, in.Password)
	if !ok {
		reply(w, 0, nil, errStatus(http.StatusUnauthorized, "wrong email or password"))
		return
	}
	sess, tok, err := p.sessions.Create(r.Context(), session.Info{
		UserID: acc.ID, Email: acc.Email, IPAddress: ip, UserAgent: r.UserAgent(),
		DeviceFingerprint: keyDigest(r.UserAgent() + "|" + ip)[:16], Extra: map[string]string{"role": acc.Role},
	})
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	access, c := p.issue(acc.ID, sess.ID, acc.Role)
	p.auditEvent(r.Context(), "login", "session:"+sess.ID, acc.Email)
	reply(w, http.StatusOK, tokens{UserID: acc.ID, Session: tok.Handle, RefreshToken: tok.Refresh, AccessToken: access,
		ExpiresAt: time.Unix(c.Exp, 0)}, nil)
}

// refresh exchanges {"session","refresh_token"} for a new refresh token
// and a new JWT. Presenting a rotated-away refresh token again revokes
// the session (theft).
func (p *platform) refresh(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Session      string `json:"session"`
		RefreshToken string `json:"refresh_token"`
	}
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	userID, sid, err := session.ParseHandle(in.Session)
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	next, err := p.sessions.RotateRefresh(r.Context(), userID, sid, in.RefreshToken)
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	sess, err := p.sessions.Get(r.Context(), userID, sid) // slides it; its role
	if err != nil {
		reply(w, 0, nil, err)
		return
	}
	access, c := p.issue(userID, sid, sess.Extra["role"])
	reply(w, http.StatusOK, tokens{UserID: userID, Session: in.Session, RefreshToken: next, AccessToken: access, ExpiresAt: time.Unix(c.Exp, 0)}, nil)
}

// logout blacklists the presented JWT until it expires and ends its
// session.
func (p *platform) logout(w http.ResponseWriter, r *http.Request) {
	c := principalOf(r).Claims
	if c.Jti == "" {
		reply(w, 0, nil, errStatus(http.StatusBadRequest, "log out with an access token, not an API key"))
		return
	}
	if _, err := p.sessions.RevokeToken(r.Context(), c.Jti, time.Unix(c.Exp, 0)); err != nil {
		reply(w, 0, nil, err)
		return
	}
	ended, err := p.sessions.Revoke(r.Context(), c.Sub, c.Sid)
	p.auditEvent(r.Context(), "logout", "session:"+c.Sid, c.Sub)
	reply(w, http.StatusOK, map[string]any{"token_revoked": c.Jti, "session_ended": ended}, err)
}

// listSessions lists the user's live sessions (the per-user index).
func (p *platform) listSessions(w http.ResponseWriter, r *http.Request) {
	who := principalOf(r)
	list, err := p.sessions.List(r.Context(), who.UserID)
	out := []map[string]any{}
	for _, e := range list {
		out = append(out, map[string]any{"session_id": e.ID, "expires_at": e.ExpiresAt, "current": e.ID == who.Claims.Sid})
	}
	reply(w, http.StatusOK, out, err)
}

// revokeSession ends one of the user's sessions ("log out that device");
// its JWTs stay valid until they expire (at most accessTTL).
func (p *platform) revokeSession(w http.ResponseWriter, r *http.Request) {
	ok, err := p.sessions.Revoke(r.Context(), principalUser(r), r.PathValue("id"))
	reply(w, http.StatusOK, map[string]bool{"revoked": ok}, err)
}

// createAPIKey makes an API key for the caller: {"id","key"}, the key
// shown once.
func (p *platform) createAPIKey(w http.ResponseWriter, r *http.Request) {
	who := principalOf(r)
	id, secret := "key-"+randomHex(6), "zk_"+randomHex(24)
	p.keyring.mu.Lock()
	p.keyring.byDigest[keyDigest(secret)] = apiKey{ID: id, UserID: who.UserID, Role: "user"} // never admin
	p.keyring.mu.Unlock()
	p.auditEvent(r.Context(), "api_key.create", id, who.UserID)
	reply(w, http.StatusCreated, map[string]string{"id": id, "key": secret}, nil)
}
