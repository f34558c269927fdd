package presence

import (
	"context"
	_ "embed"

	"github.com/redschema/redschema/internal/call"
)

var (
	//go:embed update.lua
	updateLua string

	setStatusOp   = pkg.Declare("set status", updateLua, userKeyTemplates, call.Uses(libLua, call.Batched, call.JSONStr), call.On(call.None, ErrOffline), call.Shared())
	setActivityOp = pkg.Declare("set activity", updateLua, userKeyTemplates, call.Uses(libLua, call.Batched, call.JSONStr), call.On(call.None, ErrOffline), call.Shared())
)

// Status is a user's availability as stored in the presence JSON (and an
// admin's, see Availability).
type Status string

// The statuses. Online, Away and Busy are shown to others as they are;
// Invisible is online for the system (Get, Online, notifications) and
// offline for others (Presence.Public, events, the online index).
const (
	Online    Status = "online"
	Away      Status = "away"
	Busy      Status = "busy"
	Invisible Status = "invisible"
	Offline   Status = "offline"
)

func (s Status) valid() bool {
	switch s {
	case Online, Away, Busy, Invisible, Offline:
		return true
	}
	return false
}

// SetStatus sets an online user's status (Online, Away, Busy or Invisible)
// in one atomic script (one round trip) and publishes the change as others
// see it (Invisible is published as "offline"). The status lasts while the
// user stays online; a user who comes back online later gets Conn.Status.
// A user with no live connection gives ErrOffline; Offline itself, or an
// unknown status, is ErrInvalid (use Disconnect, or Invisible). A replay
// of the request within the replay window (3 min) reports the first run's Result and
// changes and publishes nothing.
func (t *Tracker) SetStatus(ctx context.Context, user string, s Status) (Result, error) {
	const op = "set status"
	if !s.valid() || s == Offline {
		return Result{}, pkg.Invalidf(op, "status %q: want online, away, busy or invisible", s)
	}
	k, err := t.userKeys(op, user)
	if err != nil {
		return Result{}, err
	}
	return result(t.run.Run(ctx, setStatusOp, k[:], t.args(user, "", newRequestID(), string(s), "")...))
}

// SetActivity sets an online user's metadata.lastActivity ("typing",
// "idle", "active": at most the metadata limit), in one atomic script (one
// round trip). A user with no live connection gives ErrOffline. A replay
// of the request within the replay window (3 min) reports the first run's outcome and
// changes nothing (a later SetActivity is not undone).
func (t *Tracker) SetActivity(ctx context.Context, user, activity string) error {
	const op = "set activity"
	if err := checkText(op, "activity", activity, t.opt.maxMeta, true); err != nil {
		return err
	}
	k, err := t.userKeys(op, user)
	if err != nil {
		return err
	}
	_, err = t.run.Run(ctx, setActivityOp, k[:], t.args(user, "", newRequestID(), "", activity)...)
	return err
}
