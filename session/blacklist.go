package session

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed blacklist.lua
	blacklistSrc string

	blacklistOp = pkg.Declare("revoke token", blacklistSrc, []*keys.Template{blacklistKey}, call.Durable())
)

// RevokeToken blacklists the JWT whose ID is jti until expiresAt, its own
// expiry (value "1", TTL = the token's remaining validity), and reports
// whether the token is blacklisted. One script compares expiresAt with the
// server clock: a token that has already expired is not written (false),
// and an expiresAt more than 365 days ahead is ErrInvalid, nothing
// written. Revoking a blacklisted token again, or the same call resent by
// go-redis after a lost reply, leaves the entry as it is and reports true.
// A zero expiresAt is ErrInvalid.
func (s *Store) RevokeToken(ctx context.Context, jti string, expiresAt time.Time) (bool, error) {
	const op = "revoke token"
	key, err := pkg.Key(op, blacklistKey, s.opt.ns, jti)
	if err != nil {
		return false, err
	}
	at := expiresAt.UnixMilli()
	if expiresAt.IsZero() || at <= 0 {
		return false, pkg.Invalidf(op, "expiry %v not after 1970", expiresAt)
	}
	// The script checks the bound by the server's clock; this early check
	// (with a day's slack for clock skew) keeps absurd values off the wire.
	if expiresAt.After(time.Now().Add(maxTokenExpiry + 24*time.Hour)) {
		return false, pkg.Invalidf(op, "expiry %v more than %v ahead", expiresAt, maxTokenExpiry)
	}
	rep, err := s.run.Run(ctx, blacklistOp, []string{key}, at, unit.MsCeil(maxTokenExpiry))
	nd, err := call.NotDurable(err)
	if err != nil {
		return false, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return false, err
	}
	return n == 1, nd
}

// IsRevoked reports whether the JWT jti is blacklisted. One GET, sent in
// the Store's shared pipelines with concurrent calls (WithPipelining);
// an entry holding anything but "1" is keys.ErrCorrupt.
func (s *Store) IsRevoked(ctx context.Context, jti string) (bool, error) {
	const op = "is revoked"
	key, err := pkg.Key(op, blacklistKey, s.opt.ns, jti)
	if err != nil {
		return false, err
	}
	cmd := redis.NewStringCmd(ctx, "get", key)
	err = s.run.Read(ctx, key, cmd)
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, pkg.Wrap(ctx, op, key, err)
	case cmd.Val() != "1":
		return false, pkg.Fail(op, key, nil, keys.Corrupt(key, errors.New(`not "1"`)))
	}
	return true, nil
}
