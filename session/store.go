package session

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

// Store keeps sessions in seed 001's layout: one hash per session and a
// per-user index. It is safe for concurrent use.
//
// Every method that talks to Redis is one round trip (one Lua script or
// one command) and atomic; the keys of one call share the user_id hash
// tag, so they are cluster-safe. The one exception is Authenticate with
// hash tags turned off (see there). Times are read from the server (TIME)
// inside the scripts.
type Store struct {
	c   redis.UniversalClient
	cfg config
}

// New returns a Store over client. It fails with ErrInvalidInput on bad
// durations (idle <= 0, idle above the max lifetime, ...) and with
// keys.ErrInvalidNamespace on a bad namespace.
func New(client redis.UniversalClient, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("session: New: %w: nil client", ErrInvalidInput)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("session: New: %w", err)
	}
	return &Store{c: client, cfg: cfg}, nil
}

// IdleTimeout returns the sliding idle timeout.
func (s *Store) IdleTimeout() time.Duration { return s.cfg.idle }

// MaxLifetime returns the absolute lifetime cap.
func (s *Store) MaxLifetime() time.Duration { return s.cfg.life }

// Info describes a session to create.
type Info struct {
	UserID            string // required
	Email             string
	IPAddress         string
	UserAgent         string
	DeviceFingerprint string
	// Extra holds caller-defined fields, stored as hash fields beside the
	// seed's. Names must not be one of the seed's or this package's
	// fields (see Session).
	Extra map[string]string
}

// Session is a live session as read from Redis.
type Session struct {
	ID                string
	UserID            string
	Email             string
	IPAddress         string
	UserAgent         string
	DeviceFingerprint string
	// CreatedAt and LastActivity have whole-second precision: they are
	// stored as seed 001's RFC 3339 strings ("2026-01-16T10:00:00Z").
	CreatedAt    time.Time
	LastActivity time.Time
	// ExpiresAt is when the session ends unless used again: the idle
	// deadline, capped by AbsoluteExpiry.
	ExpiresAt time.Time
	// AbsoluteExpiry is created_at + the max lifetime; sliding never
	// passes it.
	AbsoluteExpiry time.Time
	// Extra holds the caller-defined fields.
	Extra map[string]string
}

// Handle returns the opaque string that identifies the session to a
// client (cookie value or bearer token): the session ID and the user ID,
// which ParseHandle recovers.
func (s *Session) Handle() string { return EncodeHandle(s.UserID, s.ID) }

// Entry is one live session in a user's index.
type Entry struct {
	ID        string
	ExpiresAt time.Time
}

func (s *Store) keyPair(op, userID, sessionID string) (string, string, error) {
	k, err := sessionKey.Key(s.cfg.ns, userID, sessionID)
	if err != nil {
		return "", "", fmt.Errorf("session: %s: %w: %w", op, ErrInvalidInput, err)
	}
	idx, err := indexKey.Key(s.cfg.ns, userID)
	if err != nil {
		return "", "", fmt.Errorf("session: %s: %w: %w", op, ErrInvalidInput, err)
	}
	return k, idx, nil
}

// Create starts a session for in.UserID. The session ID comes from
// crypto/rand (128 bits, URL-safe base64). The hash, its TTL and the index
// entry are written by one script in one round trip; with WithMaxSessions,
// the same script evicts the user's sessions that would expire first.
//
// It returns the session and its refresh token. The token is returned only
// here: Redis holds its SHA-256 alone. Bad input fails with
// ErrInvalidInput before anything is written.
func (s *Store) Create(ctx context.Context, in Info) (*Session, string, error) {
	const op = "Create"
	if in.UserID == "" {
		return nil, "", invalid(op, "empty user ID")
	}
	seed := [...][2]string{{fUserID, in.UserID}, {fEmail, in.Email}, {fIPAddress, in.IPAddress}, {fUserAgent, in.UserAgent}, {fDevice, in.DeviceFingerprint}}
	for _, f := range seed {
		if err := checkValue(op, f[0], f[1]); err != nil {
			return nil, "", err
		}
	}
	if len(in.Extra) > MaxExtraFields {
		return nil, "", invalid(op, "%d extra fields, more than %d", len(in.Extra), MaxExtraFields)
	}
	for name, v := range in.Extra {
		if err := checkExtraName(op, name); err != nil {
			return nil, "", err
		}
		if err := checkValue(op, name, v); err != nil {
			return nil, "", err
		}
	}
	sid, err := NewID()
	if err != nil {
		return nil, "", fmt.Errorf("session: %s: %w", op, err)
	}
	token, tokenHash, err := newRefreshToken()
	if err != nil {
		return nil, "", fmt.Errorf("session: %s: %w", op, err)
	}
	key, idx, err := s.keyPair(op, in.UserID, sid)
	if err != nil {
		return nil, "", err
	}
	args := make([]any, 0, 4+2*(len(seed)+1+len(in.Extra)))
	args = append(args, sid, ms(s.cfg.idle), ms(s.cfg.life), s.cfg.maxSessions)
	for _, f := range seed {
		args = append(args, f[0], f[1])
	}
	args = append(args, fRefreshHash, tokenHash)
	for name, v := range in.Extra {
		args = append(args, name, v)
	}
	v, err := run(ctx, s.c, createScript, []string{key, idx}, args...)
	if err != nil {
		return nil, "", fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if st, ok := status(v); ok && st == "exists" {
		return nil, "", fmt.Errorf("session: %s %q: session ID collision", op, key)
	}
	n, err := reply.Int64s(v)
	if err != nil || len(n) != 4 {
		return nil, "", fmt.Errorf("session: %s %q: %w", op, key, replyErr(err))
	}
	created := time.UnixMilli(n[0]).UTC().Truncate(time.Second)
	sess := &Session{
		ID: sid, UserID: in.UserID, Email: in.Email, IPAddress: in.IPAddress,
		UserAgent: in.UserAgent, DeviceFingerprint: in.DeviceFingerprint,
		CreatedAt: created, LastActivity: created,
		ExpiresAt: time.UnixMilli(n[1]), AbsoluteExpiry: time.UnixMilli(n[2]),
		Extra: copyMap(in.Extra),
	}
	return sess, token, nil
}

func replyErr(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: wrong reply length", reply.ErrUnexpected)
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Get returns a live session and, in the same script and round trip,
// slides it: last_activity becomes the server time and the idle deadline
// moves to now + idle timeout, never past the absolute expiry. A missing,
// expired, evicted or revoked session is ErrNotFound, and any leftovers of
// it are deleted; it is never written back.
func (s *Store) Get(ctx context.Context, userID, sessionID string) (*Session, error) {
	const op = "Get"
	key, idx, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return nil, err
	}
	v, err := run(ctx, s.c, getScript, []string{key, idx}, sessionID, ms(s.cfg.idle))
	if err != nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if v == nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, ErrNotFound)
	}
	if st, ok := status(v); ok && st == "corrupt" {
		return nil, keys.Corrupt(key, fmt.Errorf("unreadable %s", fAbsoluteExp))
	}
	a, err := reply.Slice(v, 3)
	if err != nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	return decodeLive(op, key, userID, sessionID, a[1], a[2])
}

// decodeLive builds the Session from a script's expiry and HGETALL reply.
func decodeLive(op, key, userID, sessionID string, expiry, fields any) (*Session, error) {
	exp, err := reply.Int64(expiry)
	if err != nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	flat, err := reply.Strings(fields)
	if err != nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	sess, err := parseSession(key, userID, sessionID, flat)
	if err != nil {
		return nil, err
	}
	sess.ExpiresAt = time.UnixMilli(exp)
	return sess, nil
}

// parseSession decodes HGETALL output. Missing or malformed required
// fields are a *keys.CorruptError naming key.
func parseSession(key, userID, sessionID string, flat []string) (*Session, error) {
	if len(flat)%2 != 0 {
		return nil, keys.Corrupt(key, fmt.Errorf("odd HGETALL reply"))
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
		case fRefreshHash, fRefreshUsed:
		default:
			sess.Extra[name] = v
		}
	}
	if sess.UserID != userID {
		return nil, keys.Corrupt(key, fmt.Errorf("%s is %q, want %q", fUserID, sess.UserID, userID))
	}
	var err error
	if sess.CreatedAt, err = time.Parse(time.RFC3339, created); err != nil {
		return nil, keys.Corrupt(key, fmt.Errorf("%s: %w", fCreatedAt, err))
	}
	if sess.LastActivity, err = time.Parse(time.RFC3339, last); err != nil {
		return nil, keys.Corrupt(key, fmt.Errorf("%s: %w", fLastActivity, err))
	}
	n, err := strconv.ParseInt(abs, 10, 64)
	if err != nil {
		return nil, keys.Corrupt(key, fmt.Errorf("%s: %w", fAbsoluteExp, err))
	}
	sess.AbsoluteExpiry = time.UnixMilli(n)
	return sess, nil
}

// Changes lists the fields Update writes.
type Changes struct {
	// Set writes fields: email, ip_address, user_agent,
	// device_fingerprint, or caller-defined extras.
	Set map[string]string
	// Delete removes caller-defined extra fields. Deletes apply before
	// sets, so a name in both ends up set.
	Delete []string
}

// Update applies ch to a live session and slides it like Get, in one
// script and round trip. It never writes to a missing, expired or revoked
// session (ErrNotFound): no HSET brings a deleted hash back. user_id,
// created_at, last_activity, absolute_expiry and the refresh-token fields
// cannot be set. Changes that would leave the session with more than
// MaxExtraFields caller-defined fields are ErrInvalidInput, checked in the
// same script before anything is written.
func (s *Store) Update(ctx context.Context, userID, sessionID string, ch Changes) error {
	const op = "Update"
	key, idx, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return err
	}
	if len(ch.Set)+len(ch.Delete) > 2*MaxExtraFields {
		return invalid(op, "too many changes")
	}
	for _, name := range ch.Delete {
		if err := checkExtraName(op, name); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(ch.Set))
	for name, v := range ch.Set {
		if !updatable[name] {
			if err := checkExtraName(op, name); err != nil {
				return err
			}
		}
		if err := checkValue(op, name, v); err != nil {
			return err
		}
		names = append(names, name)
	}
	sort.Strings(names)
	args := make([]any, 0, 4+len(ch.Delete)+2*len(names))
	args = append(args, sessionID, ms(s.cfg.idle), MaxExtraFields, len(ch.Delete))
	for _, name := range ch.Delete {
		args = append(args, name)
	}
	for _, name := range names {
		args = append(args, name, ch.Set[name])
	}
	v, err := run(ctx, s.c, updateScript, []string{key, idx}, args...)
	if err != nil {
		return fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if v == nil {
		return fmt.Errorf("session: %s %q: %w", op, key, ErrNotFound)
	}
	if st, ok := status(v); ok {
		switch st {
		case "corrupt":
			return keys.Corrupt(key, fmt.Errorf("unreadable %s", fAbsoluteExp))
		case "toomany":
			return invalid(op, "the session would hold more than %d extra fields", MaxExtraFields)
		}
	}
	if _, err := reply.Int64(v); err != nil {
		return fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	return nil
}

// Revoke ends one session at once: the hash and its index entry are
// deleted in one script. It reports whether a live session ended; revoking
// a missing session is not an error.
func (s *Store) Revoke(ctx context.Context, userID, sessionID string) (bool, error) {
	const op = "Revoke"
	key, idx, err := s.keyPair(op, userID, sessionID)
	if err != nil {
		return false, err
	}
	v, err := run(ctx, s.c, revokeScript, []string{key, idx}, sessionID)
	if err != nil {
		return false, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	n, err := reply.Int64(v)
	if err != nil {
		return false, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	return n == 1, nil
}

// RevokeAll ends every session of userID at once ("log out everywhere")
// and returns how many were live. It is one script on the index alone:
// every operation checks the index, so the sessions are dead when it
// returns; their hashes are deleted by the next call that names them or
// expire with their idle TTL, and are never readable again.
func (s *Store) RevokeAll(ctx context.Context, userID string) (int, error) {
	return s.revokeAll(ctx, "RevokeAll", userID, "")
}

// RevokeOthers ends every session of userID except keep, like RevokeAll.
// keep stays as it is (it is not slid); if keep is not live, all sessions
// end.
func (s *Store) RevokeOthers(ctx context.Context, userID, keep string) (int, error) {
	if keep == "" {
		return 0, invalid("RevokeOthers", "empty session ID to keep")
	}
	return s.revokeAll(ctx, "RevokeOthers", userID, keep)
}

func (s *Store) revokeAll(ctx context.Context, op, userID, keep string) (int, error) {
	idx, err := indexKey.Key(s.cfg.ns, userID)
	if err != nil {
		return 0, fmt.Errorf("session: %s: %w: %w", op, ErrInvalidInput, err)
	}
	v, err := run(ctx, s.c, revokeAllScript, []string{idx}, keep)
	if err != nil {
		return 0, fmt.Errorf("session: %s %q: %w", op, idx, err)
	}
	n, err := reply.Int64(v)
	if err != nil {
		return 0, fmt.Errorf("session: %s %q: %w", op, idx, err)
	}
	return int(n), nil
}

// List returns the live sessions of userID, soonest expiry first, in one
// round trip; the same script prunes expired entries from the index and
// resets its TTL. It does not slide any session. Read the details of one
// with Get.
func (s *Store) List(ctx context.Context, userID string) ([]Entry, error) {
	const op = "List"
	idx, err := indexKey.Key(s.cfg.ns, userID)
	if err != nil {
		return nil, fmt.Errorf("session: %s: %w: %w", op, ErrInvalidInput, err)
	}
	v, err := run(ctx, s.c, listScript, []string{idx})
	if err != nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, idx, err)
	}
	flat, err := reply.Strings(v)
	if err != nil || len(flat)%2 != 0 {
		return nil, fmt.Errorf("session: %s %q: %w", op, idx, replyErr(err))
	}
	out := make([]Entry, 0, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		score, err := strconv.ParseFloat(flat[i+1], 64)
		if err != nil {
			return nil, keys.Corrupt(idx, fmt.Errorf("score of %q: %w", flat[i], err))
		}
		out = append(out, Entry{ID: flat[i], ExpiresAt: time.UnixMilli(int64(score))})
	}
	return out, nil
}
