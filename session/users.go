package session

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

// Status is a user record's status (seed 000). The status field is the
// truth: the seed's JavaScript example also writes an "active" field,
// which this package neither writes nor reads.
type Status string

// The statuses of seed 000.
const (
	// StatusLogin: full access.
	StatusLogin Status = "login"
	// StatusAnonymous: may read (view) but not write.
	StatusAnonymous Status = "anonymous"
	// StatusBlocked: no access, even with a valid session.
	StatusBlocked Status = "blocked"
)

// CanWrite reports whether the status allows writes: only StatusLogin.
func (s Status) CanWrite() bool { return s == StatusLogin }

// User is a user record (seed 000's user:{user_id} hash).
type User struct {
	ID        string
	DeviceID  string
	IPAddress string
	// LoginTime and LastSeen are stored as Unix milliseconds strings, as in
	// seed 000 ("1672531200000").
	LoginTime time.Time
	LastSeen  time.Time
	Status    Status
}

// CanWrite reports whether the user may write (create topics, chat):
// status login. Anonymous users may only read; blocked users nothing.
func (u *User) CanWrite() bool { return u != nil && u.Status.CanWrite() }

// Users keeps seed 000's user records. It is safe for concurrent use;
// every method is one round trip (one script or one command).
type Users struct {
	c   redis.UniversalClient
	cfg config
}

// NewUsers returns a Users over client. Options: WithNamespace,
// WithUserTTL (default 7 days).
func NewUsers(client redis.UniversalClient, opts ...Option) (*Users, error) {
	if client == nil {
		return nil, fmt.Errorf("session: NewUsers: %w: nil client", ErrInvalidInput)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("session: NewUsers: %w", err)
	}
	return &Users{c: client, cfg: cfg}, nil
}

func (u *Users) key(op, userID string) (string, error) {
	k, err := userKey.Key(u.cfg.ns, userID)
	if err != nil {
		return "", fmt.Errorf("session: %s: %w: %w", op, ErrInvalidInput, err)
	}
	return k, nil
}

// LoginInfo describes a login.
type LoginInfo struct {
	DeviceID  string // required
	IPAddress string // optional
	// Anonymous makes the record read-only (status anonymous).
	Anonymous bool
}

// Login writes a fresh record for userID (status login, or anonymous),
// with login_time and last_seen set to the server time and the user TTL,
// in one script. A blocked user stays blocked: ErrBlocked, nothing written.
func (u *Users) Login(ctx context.Context, userID string, in LoginInfo) (*User, error) {
	const op = "Login"
	key, err := u.key(op, userID)
	if err != nil {
		return nil, err
	}
	if in.DeviceID == "" {
		return nil, invalid(op, "empty device ID")
	}
	if err := checkValue(op, "device_id", in.DeviceID); err != nil {
		return nil, err
	}
	if err := checkValue(op, "ip_address", in.IPAddress); err != nil {
		return nil, err
	}
	st := StatusLogin
	if in.Anonymous {
		st = StatusAnonymous
	}
	v, err := run(ctx, u.c, userLoginScript, []string{key}, ms(u.cfg.userTTL), string(st), in.DeviceID, in.IPAddress)
	if err != nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if s, ok := status(v); ok && s == "blocked" {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, ErrBlocked)
	}
	now, err := reply.Int64(v)
	if err != nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	t := time.UnixMilli(now)
	return &User{ID: userID, DeviceID: in.DeviceID, IPAddress: in.IPAddress, LoginTime: t, LastSeen: t, Status: st}, nil
}

// Validate is the per-request check, one script and one round trip: it
// sets last_seen to the server time, refreshes the TTL and returns the
// record. A missing record is ErrNotFound; a blocked user is ErrBlocked
// (the TTL is refreshed then too, so a block does not lapse while the user
// keeps trying). An anonymous user is returned with CanWrite false.
func (u *Users) Validate(ctx context.Context, userID string) (*User, error) {
	const op = "Validate"
	key, err := u.key(op, userID)
	if err != nil {
		return nil, err
	}
	v, err := run(ctx, u.c, userValidateScript, []string{key}, ms(u.cfg.userTTL))
	if err != nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if v == nil {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, ErrNotFound)
	}
	if s, ok := status(v); ok && s == "corrupt" {
		return nil, keys.Corrupt(key, fmt.Errorf("missing or unknown status"))
	}
	return decodeUser(op, key, userID, v)
}

// decodeUser builds the User from an HGETALL reply; a blocked user is
// ErrBlocked.
func decodeUser(op, key, userID string, v any) (*User, error) {
	flat, err := reply.Strings(v)
	if err != nil || len(flat)%2 != 0 {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, replyErr(err))
	}
	usr, err := parseUser(key, userID, flat)
	if err != nil {
		return nil, err
	}
	if usr.Status == StatusBlocked {
		return nil, fmt.Errorf("session: %s %q: %w", op, key, ErrBlocked)
	}
	return usr, nil
}

func parseUser(key, userID string, flat []string) (*User, error) {
	usr := &User{ID: userID}
	for i := 0; i < len(flat); i += 2 {
		name, v := flat[i], flat[i+1]
		var err error
		switch name {
		case "device_id":
			usr.DeviceID = v
		case "ip_address":
			usr.IPAddress = v
		case "status":
			usr.Status = Status(v)
		case "login_time":
			usr.LoginTime, err = unixMilli(v)
		case "last_seen":
			usr.LastSeen, err = unixMilli(v)
		}
		if err != nil {
			return nil, keys.Corrupt(key, fmt.Errorf("%s: %w", name, err))
		}
	}
	return usr, nil
}

func unixMilli(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(n), nil
}

// Block sets the user's status to blocked at once and refreshes the TTL,
// in one script; Validate and Login fail with ErrBlocked from then on. A
// user without a record gets one holding only the blocked status, so a
// login within the TTL is refused. The block lasts while the record does
// (the TTL, refreshed by each Validate); keep permanent bans in your user
// database. Blocking a blocked user only refreshes the TTL.
func (u *Users) Block(ctx context.Context, userID string) error {
	const op = "Block"
	key, err := u.key(op, userID)
	if err != nil {
		return err
	}
	if err := userBlockScript.Run(ctx, u.c, []string{key}, ms(u.cfg.userTTL)).Err(); err != nil {
		return fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	return nil
}

// Unblock lifts a block at once, in one script: the status before the
// block (login or anonymous) comes back. A record that Block created for a
// user without one is deleted. ErrNotFound when there is no record;
// unblocking a user who is not blocked is a no-op.
func (u *Users) Unblock(ctx context.Context, userID string) error {
	const op = "Unblock"
	key, err := u.key(op, userID)
	if err != nil {
		return err
	}
	v, err := run(ctx, u.c, userUnblockScript, []string{key})
	if err != nil {
		return fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	if v == nil {
		return fmt.Errorf("session: %s %q: %w", op, key, ErrNotFound)
	}
	if s, ok := status(v); ok && s == "corrupt" {
		return keys.Corrupt(key, fmt.Errorf("missing status"))
	}
	if _, err := reply.Int64(v); err != nil {
		return fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	return nil
}

// Logout deletes the user record at once, as seed 000 does, in one
// script. It does not touch the user's sessions: call Store.RevokeAll for
// that. A blocked record is kept, so that logging out never lifts a block.
// Logging out a user without a record is a no-op.
func (u *Users) Logout(ctx context.Context, userID string) error {
	const op = "Logout"
	key, err := u.key(op, userID)
	if err != nil {
		return err
	}
	if err := userLogoutScript.Run(ctx, u.c, []string{key}).Err(); err != nil {
		return fmt.Errorf("session: %s %q: %w", op, key, err)
	}
	return nil
}
