package presence

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"unicode/utf8"

	"github.com/redschema/redschema/internal/call"
)

var (
	//go:embed connect.lua
	connectLua string
	//go:embed heartbeat.lua
	heartbeatLua string
	//go:embed heartbeat_fast.lua
	heartbeatFastLua string
	//go:embed disconnect.lua
	disconnectLua string

	connectOp = pkg.Declare("connect", connectLua, userKeyTemplates, call.Uses(libLua, call.Batched, call.JSONStr),
		call.On(call.Limit, ErrTooManyConnections), call.Shared())
	disconnectOp = pkg.Declare("disconnect", disconnectLua, userKeyTemplates, call.Uses(libLua, call.Batched, call.JSONStr), call.Shared())
	heartbeatOp  = pkg.Declare("heartbeat", heartbeatLua, userKeyTemplates, call.Head(heartbeatFastLua), call.Uses(libLua, call.Batched, call.JSONStr),
		call.On(call.None, ErrUnknownConnection), call.Shared())
)

// Metadata describes one connection, stored in its JSON under "metadata".
// Empty fields are omitted.
type Metadata struct {
	Device    string `json:"device,omitempty"`    // "web", "mobile", "desktop"
	UserAgent string `json:"userAgent,omitempty"` // the client's User-Agent
	IP        string `json:"ip,omitempty"`        // the client's address
	SocketID  string `json:"socketId,omitempty"`  // the transport's socket ID
}

// Conn is a connection to register with Connect.
type Conn struct {
	// ID names the connection among the user's (a hash field, not a key):
	// non-empty, at most 256 bytes of UTF-8.
	ID string
	// Metadata is stored in the connection's JSON.
	Metadata Metadata
	// Status is taken when the user comes online with this connection
	// (e.g. Invisible for a user who chose to hide); a user already online
	// keeps their status. Empty means Online. Offline is not accepted.
	Status Status
	// Activity, if set, is stored as the presence's metadata.lastActivity
	// ("typing", "idle", "active").
	Activity string
}

// Result is the outcome of Connect, Heartbeat, Disconnect and SetStatus.
type Result struct {
	// Connections is the number of live connections after the operation.
	Connections int
	// Changed reports an online-ness transition made by the operation:
	// the user came online (Connect) or went offline (Disconnect, or
	// Heartbeat of an unknown connection whose user had only stale ones).
	// For SetStatus it reports that the status changed.
	Changed bool
	// Status is the user's stored status after the operation.
	Status Status
}

// result decodes the reply of a script on a user's keys: ok, none or
// limit with (live connections, changed, status). A sentinel error comes
// with its Result.
func result(rep call.Reply, err error) (Result, error) {
	if err != nil && (rep.Len() == 0 || rep.Status == call.Corrupt || rep.Status == call.Invalid) {
		return Result{}, err
	}
	r := Result{Connections: int(rep.Int(0)), Changed: rep.Int(1) == 1, Status: Status(rep.Str(2))}
	if e := rep.Err(); e != nil {
		return Result{}, e
	}
	return r, err
}

func checkText(op, what, s string, max int, required bool) error {
	switch {
	case required && s == "":
		return pkg.Invalidf(op, "empty %s", what)
	case len(s) > max:
		return pkg.Invalidf(op, "%s longer than %d bytes", what, max)
	case !utf8.ValidString(s):
		return pkg.Invalidf(op, "%s is not valid UTF-8", what)
	}
	return nil
}

func encodeJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// Connect registers connection c of user with its metadata and marks the
// user online, in one atomic script (one round trip). Stale connections of
// the user (no heartbeat for the profile's TTL) are pruned first. A known
// connection ID is replaced (new connectedAt). The presence key and the
// connections hash (LayoutHash; LayoutSingleKey keeps the connections in
// the presence key) expire TTL after the freshest heartbeat.
// Result.Changed reports that the user came online; an event (offline ->
// the status taken) is then published unless that status is Invisible (if
// the user's previous presence expired silently and no Sweep has announced
// it yet, its offline event is published instead, as Sweep would have).
//
// Under retry: a replay of the request (go-redis resending it after a lost
// reply) within the replay window (3 min) reports the first run's Result and changes
// and publishes nothing, whatever ran on the user meanwhile.
//
// Errors: ErrInvalid before anything is written (a bad user ID, which also
// matches keys.ErrInvalid; an empty or long connection ID; metadata
// over the limit; Offline or an unknown status), ErrTooManyConnections
// (nothing registered), keys.ErrCorrupt naming the key, or Redis errors.
func (t *Tracker) Connect(ctx context.Context, user string, c Conn) (Result, error) {
	const op = "connect"
	md := c.Metadata
	k, err := t.userKeys(op, user)
	if err != nil {
		return Result{}, err
	}
	if err := checkText(op, "connection ID", c.ID, maxConnIDLen, true); err != nil {
		return Result{}, err
	}
	st := c.Status
	if st == "" {
		st = Online
	}
	if !st.valid() || st == Offline {
		return Result{}, pkg.Invalidf(op, "status %q: want online, away, busy or invisible", c.Status)
	}
	for _, f := range []string{md.Device, md.UserAgent, md.IP, md.SocketID, c.Activity} {
		if err := checkText(op, "metadata", f, t.opt.maxMeta, false); err != nil {
			return Result{}, err
		}
	}
	mdJSON, err := encodeJSON(md)
	if err != nil {
		return Result{}, pkg.Invalid(op, err)
	}
	if n := len(mdJSON) + len(c.Activity); n > t.opt.maxMeta {
		return Result{}, pkg.Invalidf(op, "metadata of %d bytes exceeds %d", n, t.opt.maxMeta)
	}
	return result(t.run.Run(ctx, connectOp, k[:], t.args(user, c.ID, newRequestID(), mdJSON, string(st), c.Activity, t.opt.maxConns)...))
}

// Heartbeat refreshes connection conn of user: its lastSeen, the user's
// presence lastSeen and the TTLs, in one atomic script (one round trip).
// Stale connections are pruned first. A connection that is not registered
// (never connected, disconnected, or already pruned as stale) gives
// ErrUnknownConnection and is not registered again: the client must
// Connect again with its metadata. In that case Result still reports the
// user's state (the prune may have taken the user offline:
// Result.Changed).
//
// Under retry: running a heartbeat twice is running it once; a replay that
// finds the connection pruned by its own first run reports that run's
// Result. Heartbeats share pipelines with concurrent calls (see
// WithPipelining).
//
// The heartbeat of a live connection of a user who stays online (the
// usual one) is the Tracker's lean path: it refreshes the times and TTLs
// and the index score without pruning the online index, which only the
// operations that add members to it, and Sweep, need to do.
func (t *Tracker) Heartbeat(ctx context.Context, user, conn string) (Result, error) {
	const op = "heartbeat"
	k, err := t.userKeys(op, user)
	if err != nil {
		return Result{}, err
	}
	if err := checkText(op, "connection ID", conn, maxConnIDLen, true); err != nil {
		return Result{}, err
	}
	return result(t.run.Run(ctx, heartbeatOp, k[:], t.args(user, conn, newRequestID())...))
}

// Disconnect removes connection conn of user, in one atomic script (one
// round trip), and marks the user offline if no live connection is left:
// the presence key then keeps status "offline" and lastSeen for the
// profile's Retention (or is deleted when it is zero), and an "offline"
// event is published. Removing an unknown connection is not an error.
// Result.Connections is the number left; Result.Changed that the user went
// offline. A replay of the request within the replay window (3 min) reports the first
// run's Result and changes and publishes nothing.
func (t *Tracker) Disconnect(ctx context.Context, user, conn string) (Result, error) {
	const op = "disconnect"
	k, err := t.userKeys(op, user)
	if err != nil {
		return Result{}, err
	}
	if err := checkText(op, "connection ID", conn, maxConnIDLen, true); err != nil {
		return Result{}, err
	}
	return result(t.run.Run(ctx, disconnectOp, k[:], t.args(user, conn, newRequestID())...))
}
