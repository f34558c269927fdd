package session

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed user_login.lua
	userLoginSrc string
	//go:embed user_validate.lua
	userValidateSrc string
	//go:embed user_block.lua
	userBlockSrc string
	//go:embed user_unblock.lua
	userUnblockSrc string
	//go:embed user_logout.lua
	userLogoutSrc string

	userKeys        = []*keys.Template{userKey}
	userRequestKeys = []*keys.Template{userKey, requestKey}
	userLoginOp     = pkg.Declare("login", userLoginSrc, userRequestKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.On(call.Conflict, ErrBlocked))
	userValidateOp  = pkg.Declare("validate", userValidateSrc, userKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.On(call.None, ErrNotFound))
	userBlockOp     = pkg.Declare("block", userBlockSrc, userKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.Durable())
	userUnblockOp   = pkg.Declare("unblock", userUnblockSrc, userRequestKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS), call.On(call.None, ErrNotFound))
	userLogoutOp    = pkg.Declare("logout", userLogoutSrc, userKeys, call.Uses(libSrc, call.ExpireAt, call.RFC3339, call.ScoreMS))
)

// Users keeps user records (user:{user_id}) with a status. It is safe for
// concurrent use; every method is one round trip (one script).
//
// A record may also hold the home-automation backend's active flag
// ('true' or 'false', written by that system's own code): the user is
// blocked when either field says so (status blocked, or active 'false');
// otherwise the status decides, and a record with active 'true' and no
// status is a login. Block and Unblock keep an active flag the record has
// in step; WithActiveField makes Login, Block and Unblock write it always,
// so that the backend's own validator agrees (docs/session.md, "The active
// flag").
type Users struct {
	run *call.Runner
	opt options
}

// NewUsers returns a Users over client. Options: WithNamespace,
// WithUserTTL (default 7 days), WithDurability (for Block),
// WithActiveField. It fails like New.
func NewUsers(client redis.UniversalClient, opts ...Option) (*Users, error) {
	o, err := newOptions("new users", client, opts)
	if err != nil {
		return nil, err
	}
	run := call.NewRunner(client, 0)
	run.SetDurability(o.durable)
	return &Users{run: run, opt: o}, nil
}

// activeArg is the scripts' WithActiveField argument.
func (u *Users) activeArg() string {
	if u.opt.activeField {
		return "1"
	}
	return "0"
}

func (u *Users) key(op, userID string) (string, error) {
	return pkg.Key(op, userKey, u.opt.ns, userID)
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
// in one script (and active 'true' with WithActiveField). A blocked user
// (status blocked, or active 'false') stays blocked: ErrBlocked, nothing
// written. A record holding a status or active flag this package does not
// read is keys.ErrCorrupt. The same call resent by go-redis after a lost reply
// reports its first login (within the replay window, 3 minutes).
func (u *Users) Login(ctx context.Context, userID string, in LoginInfo) (*User, error) {
	const op = "login"
	key, err := u.key(op, userID)
	if err != nil {
		return nil, err
	}
	if in.DeviceID == "" {
		return nil, pkg.Invalidf(op, "empty device ID")
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
	rk, err := newRequestKey(op, u.opt.ns, userID)
	if err != nil {
		return nil, err
	}
	rep, err := u.run.Run(ctx, userLoginOp, []string{key, rk}, unit.MsFloor(u.opt.userTTL), string(st), in.DeviceID, in.IPAddress, unit.MsFloor(replayWindow), u.activeArg())
	if err != nil {
		return nil, err
	}
	now := rep.Int(0)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	t := time.UnixMilli(now)
	return &User{ID: userID, DeviceID: in.DeviceID, IPAddress: in.IPAddress, LoginTime: t, LastSeen: t, Status: st}, nil
}

// Validate is the per-request check, one script and one round trip: it
// sets last_seen to the server time, refreshes the TTL and returns the
// record. A missing record is ErrNotFound; a blocked user (status blocked,
// or active 'false') is ErrBlocked
// (the TTL is refreshed then too, so a block does not lapse while the user
// keeps trying). An anonymous user is returned with CanWrite false.
func (u *Users) Validate(ctx context.Context, userID string) (*User, error) {
	const op = "validate"
	key, err := u.key(op, userID)
	if err != nil {
		return nil, err
	}
	rep, err := u.run.Run(ctx, userValidateOp, []string{key}, unit.MsFloor(u.opt.userTTL))
	if err != nil {
		return nil, err
	}
	usr := decodeUser(&rep, 0, key, userID)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	if usr.Status == StatusBlocked {
		return nil, pkg.Fail(op, key, ErrBlocked, nil)
	}
	return usr, nil
}

// Block sets the user's status to blocked at once and refreshes the TTL,
// in one script; Validate and Login fail with ErrBlocked from then on. An
// active flag the record has (any, with WithActiveField) becomes 'false'. A
// user without a record gets one holding only the blocked status, so a
// login within the TTL is refused. The block lasts while the record does
// (the TTL, refreshed by each Validate); keep permanent bans in your user
// database. Blocking a blocked user only refreshes the TTL; a status this
// package does not write is overwritten (Unblock then deletes the record).
func (u *Users) Block(ctx context.Context, userID string) error {
	return u.simple(ctx, userBlockOp, userID, "", unit.MsFloor(u.opt.userTTL), u.activeArg())
}

// Unblock lifts a block at once, in one script: the status before the
// block (login or anonymous) comes back, and an active flag the record has
// (any, with WithActiveField) becomes 'true'. A record that Block created for a
// user without one is deleted; a user's record that another writer
// blocked (no status before the block) comes back as login. ErrNotFound when there is no record;
// unblocking a user who is not blocked is a no-op. The same call resent by
// go-redis after a lost reply reports its first outcome (within
// the replay window, 3 minutes).
func (u *Users) Unblock(ctx context.Context, userID string) error {
	const op = "unblock"
	rk, err := newRequestKey(op, u.opt.ns, userID)
	if err != nil {
		return err
	}
	return u.simple(ctx, userUnblockOp, userID, rk, unit.MsFloor(replayWindow), u.activeArg())
}

// Logout deletes the user record at once, in one script. It does not
// touch the user's sessions: call Store.RevokeAll for that. A blocked
// record is kept, so that logging out never lifts a block. Logging out a
// user without a record is a no-op.
func (u *Users) Logout(ctx context.Context, userID string) error {
	return u.simple(ctx, userLogoutOp, userID, "")
}

// simple runs a user-record op whose payload is one integer, with the
// request key rk ("" for none) after the user record.
func (u *Users) simple(ctx context.Context, op *call.Op, userID, rk string, args ...any) error {
	key, err := u.key(op.Name(), userID)
	if err != nil {
		return err
	}
	ks := []string{key}
	if rk != "" {
		ks = append(ks, rk)
	}
	rep, err := u.run.Run(ctx, op, ks, args...)
	if err != nil {
		return err
	}
	rep.Int(0)
	return rep.Err()
}
