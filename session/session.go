package session

import (
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/redschema/redschema/internal/call"
)

// Info describes a session to create.
type Info struct {
	UserID            string // required
	Email             string
	IPAddress         string
	UserAgent         string
	DeviceFingerprint string
	// IdleTimeout and MaxLifetime, when not zero, are this session's own
	// idle timeout and lifetime cap in place of the Store's
	// (WithIdleTimeout, WithMaxLifetime): a "remember me" login gets
	// longer ones, a sensitive one shorter. MaxLifetime is 1ms to
	// 365 days, IdleTimeout 1ms to the session's lifetime cap.
	// They are stored with the session (absolute_expiry, idle_timeout),
	// so every call that slides it (Get, Update, Authenticate, Renew,
	// Middleware) honours them, and Cookie's Max-Age follows the
	// session's own absolute expiry.
	IdleTimeout time.Duration
	MaxLifetime time.Duration
	// Extra holds caller-defined fields, stored as hash fields beside the
	// package's own. Names must not be one of the package's fields
	// (user_id, email, created_at, last_activity, ip_address, user_agent,
	// device_fingerprint, refresh_token_hash, absolute_expiry,
	// refresh_token_used, idle_timeout).
	Extra map[string]string
}

// Session is a live session as read from Redis. It holds no credential:
// the handle that authenticates it is returned once, by Create.
type Session struct {
	// ID names the session in its key, its index entry, List and errors:
	// a digest of the handle's secret, which can revoke the session
	// (Revoke, RevokeOthers) but never authenticate it.
	ID                string
	UserID            string
	Email             string
	IPAddress         string
	UserAgent         string
	DeviceFingerprint string
	// CreatedAt and LastActivity have whole-second precision: they are
	// stored as RFC 3339 strings ("2026-01-16T10:00:00Z").
	CreatedAt    time.Time
	LastActivity time.Time
	// ExpiresAt is when the session ends unless used again: the idle
	// deadline, capped by AbsoluteExpiry.
	ExpiresAt time.Time
	// AbsoluteExpiry is created_at + the max lifetime (the session's own,
	// Info.MaxLifetime, or the Store's); sliding never passes it.
	AbsoluteExpiry time.Time
	// IdleTimeout is the session's own idle timeout (Info.IdleTimeout);
	// zero when it slides by the Store's.
	IdleTimeout time.Duration
	// Extra holds the caller-defined fields.
	Extra map[string]string
}

// Entry is one live session in a user's index.
type Entry struct {
	// ID is the session's ID (see Session.ID): it can revoke the session
	// but not authenticate it.
	ID        string
	ExpiresAt time.Time
}

// decodeLive builds the Session from a script's expiry (payload element
// i) and HGETALL reply (element i+1), recording corruption in rep.
func decodeLive(rep *call.Reply, i int, key, userID, sessionID string) *Session {
	exp := rep.Int(i)
	flat := rep.Strs(i + 1)
	if rep.Err() != nil {
		return nil
	}
	sess, err := parseSession(userID, sessionID, flat)
	if err != nil {
		rep.Corruptf(key, "%v", err)
		return nil
	}
	sess.ExpiresAt = time.UnixMilli(exp)
	return sess
}

// parseSession decodes HGETALL output; a missing or malformed required
// field is an error.
func parseSession(userID, sessionID string, flat []string) (*Session, error) {
	if len(flat)%2 != 0 {
		return nil, fmt.Errorf("odd HGETALL reply")
	}
	sess := &Session{ID: sessionID, Extra: map[string]string{}}
	var created, last, abs string
	for i := 0; i < len(flat); i += 2 {
		name, v := flat[i], flat[i+1]
		switch name {
		case fUserID:
			sess.UserID = v
		case fEmail:
			sess.Email = v
		case fIPAddress:
			sess.IPAddress = v
		case fUserAgent:
			sess.UserAgent = v
		case fDevice:
			sess.DeviceFingerprint = v
		case fCreatedAt:
			created = v
		case fLastActivity:
			last = v
		case fAbsoluteExp:
			abs = v
		case fIdleTimeout:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || n > maxLifetime.Milliseconds() {
				return nil, fmt.Errorf("%s %q is not a timeout this package writes", fIdleTimeout, v)
			}
			sess.IdleTimeout = time.Duration(n) * time.Millisecond
		case fRefreshHash, fRefreshUsed:
		default:
			sess.Extra[name] = v
		}
	}
	if sess.UserID != userID {
		return nil, fmt.Errorf("%s is %q, want %q", fUserID, sess.UserID, userID)
	}
	var err error
	if sess.CreatedAt, err = time.Parse(time.RFC3339, created); err != nil {
		return nil, fmt.Errorf("%s: %w", fCreatedAt, err)
	}
	if sess.LastActivity, err = time.Parse(time.RFC3339, last); err != nil {
		return nil, fmt.Errorf("%s: %w", fLastActivity, err)
	}
	n, err := strconv.ParseInt(abs, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fAbsoluteExp, err)
	}
	sess.AbsoluteExpiry = time.UnixMilli(n)
	if life := sess.AbsoluteExpiry.Sub(sess.CreatedAt); life < 0 || life > maxLifetime+time.Second {
		return nil, fmt.Errorf("%s is %v after %s", fAbsoluteExp, life, fCreatedAt)
	}
	return sess, nil
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}
