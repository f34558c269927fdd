package session

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed lib.lua
	libSrc string
	//go:embed create.lua
	createSrc string

	// sessionKeys are the KEYS of the scripts on one session.
	sessionKeys = []*keys.Template{sessionKey, indexKey}

	// Create may share pipelines: a resent Create finds its own session
	// (see create.lua).
	createOp = declare("create", createSrc, sessionKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.Needs(call.Batched), call.Shared(), call.Durable())
)

// Create starts a session for in.UserID and returns it with its Tokens:
// the handle (the bearer credential: 256 random bits from crypto/rand and
// the user ID) and the first refresh token. Neither is stored: the
// session's ID is a digest of the handle's secret, and the refresh token
// is kept as its SHA-256. The hash, its TTL and the index entry are
// written by one script in one round trip; with WithMaxSessions, the same
// script evicts the user's sessions that would expire first.
//
// The ID and token are drawn before the request is sent, so a request that
// go-redis resends after a lost reply finds its own session and reports it
// once: no duplicate, no orphan. When the call fails on the wire anyway
// (retries off or exhausted, a timeout), the session may exist on the
// server with nobody holding its handle: Create then revokes it in the
// background, best effort, so that it neither lingers in List nor counts
// against WithMaxSessions. Info.IdleTimeout and Info.MaxLifetime give the
// session timeouts of its own ("remember me"), stored with it. Bad input
// fails with ErrInvalid before anything is written. With WithDurability, a session created but acknowledged by
// fewer replicas than asked is returned, live, with its Tokens and an
// error matching ErrNotDurable.
func (s *Store) Create(ctx context.Context, in Info) (*Session, Tokens, error) {
	const op = "create"
	if in.UserID == "" {
		return nil, Tokens{}, pkg.Invalidf(op, "empty user ID")
	}
	fields := [...][2]string{{fUserID, in.UserID}, {fEmail, in.Email}, {fIPAddress, in.IPAddress}, {fUserAgent, in.UserAgent}, {fDevice, in.DeviceFingerprint}}
	for _, f := range fields {
		if err := checkValue(op, f[0], f[1]); err != nil {
			return nil, Tokens{}, err
		}
	}
	if len(in.Extra) > maxExtraFields {
		return nil, Tokens{}, pkg.Invalidf(op, "%d extra fields, more than %d", len(in.Extra), maxExtraFields)
	}
	for name, v := range in.Extra {
		if err := checkExtraName(op, name); err != nil {
			return nil, Tokens{}, err
		}
		if err := checkValue(op, name, v); err != nil {
			return nil, Tokens{}, err
		}
	}
	idleArg, lifeArg := s.idleArg, s.lifeArg
	life := s.opt.life
	if in.MaxLifetime != 0 {
		if in.MaxLifetime < time.Millisecond || in.MaxLifetime > maxLifetime {
			return nil, Tokens{}, pkg.Invalidf(op, "max lifetime %v outside [1ms, %v]", in.MaxLifetime, maxLifetime)
		}
		life = in.MaxLifetime
		lifeArg = strconv.FormatInt(unit.MsFloor(life), 10)
	}
	if in.IdleTimeout != 0 {
		if in.IdleTimeout < time.Millisecond || in.IdleTimeout > life {
			return nil, Tokens{}, pkg.Invalidf(op, "idle timeout %v outside [1ms, max lifetime %v]", in.IdleTimeout, life)
		}
		idleArg = strconv.FormatInt(unit.MsFloor(in.IdleTimeout), 10)
	}
	handle, sid, err := newHandle(in.UserID)
	if err != nil {
		return nil, Tokens{}, pkg.Fail(op, "", nil, err)
	}
	refresh, refreshHash, err := newRefreshToken()
	if err != nil {
		return nil, Tokens{}, pkg.Fail(op, "", nil, err)
	}
	ks, err := s.keyPair(op, in.UserID, sid)
	if err != nil {
		return nil, Tokens{}, err
	}
	args := make([]any, 0, 9+len(fields)+2*len(in.Extra))
	args = append(args, sid, idleArg, lifeArg, s.maxArg, refreshHash)
	for _, f := range fields {
		args = append(args, f[1])
	}
	for name, v := range in.Extra {
		args = append(args, name, v)
	}
	if in.IdleTimeout != 0 {
		args = append(args, fIdleTimeout, idleArg)
	}
	run, ks, args, err := s.withEvents(createOp, ks[1], in.UserID, ks, args)
	if err != nil {
		return nil, Tokens{}, err
	}
	rep, err := s.run.Run(ctx, run, ks, args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		if !errors.Is(err, keys.ErrCorrupt) && !errors.Is(err, ErrInvalid) {
			s.abandon(ctx, in.UserID, sid)
		}
		return nil, Tokens{}, err
	}
	now, exp, abs := rep.Int(0), rep.Int(1), rep.Int(2)
	if err := rep.Err(); err != nil {
		return nil, Tokens{}, err
	}
	created := time.UnixMilli(now).UTC().Truncate(time.Second)
	sess := &Session{
		ID: sid, UserID: in.UserID, Email: in.Email, IPAddress: in.IPAddress,
		UserAgent: in.UserAgent, DeviceFingerprint: in.DeviceFingerprint,
		CreatedAt: created, LastActivity: created,
		ExpiresAt: time.UnixMilli(exp), AbsoluteExpiry: time.UnixMilli(abs),
		IdleTimeout: in.IdleTimeout,
		Extra:       copyMap(in.Extra),
	}
	return sess, Tokens{Handle: handle, Refresh: refresh}, nd
}

// abandonTimeout bounds the background clean-up of an abandoned session.
const abandonTimeout = 2 * time.Second

// abandon revokes session sid of userID in the background, best effort,
// after a Create whose outcome is unknown (its reply lost to a timeout or
// a cut connection). The ID is unique to that call, so no one else's
// session is touched.
func (s *Store) abandon(ctx context.Context, userID, sid string) {
	ctx = context.WithoutCancel(ctx)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, abandonTimeout)
		defer cancel()
		_, _ = s.Revoke(ctx, userID, sid)
	}()
}
