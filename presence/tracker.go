package presence

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed index.lua
	indexLua string
	//go:embed lib.lua
	libLua string
	//go:embed connect.lua
	connectLua string
	//go:embed heartbeat.lua
	heartbeatLua string
	//go:embed disconnect.lua
	disconnectLua string
	//go:embed update.lua
	updateLua string

	connectScript    = script.New(indexLua, libLua, connectLua)
	heartbeatScript  = script.New(indexLua, libLua, heartbeatLua)
	disconnectScript = script.New(indexLua, libLua, disconnectLua)
	updateScript     = script.New(indexLua, libLua, updateLua)
)

// Metadata describes one connection, stored in its JSON under "metadata"
// with seed 002's field names. Empty fields are omitted.
type Metadata struct {
	Device    string `json:"device,omitempty"`    // "web", "mobile", "desktop"
	UserAgent string `json:"userAgent,omitempty"` // the client's User-Agent
	IP        string `json:"ip,omitempty"`        // the client's address
	SocketID  string `json:"socketId,omitempty"`  // the transport's socket ID
}

// Conn is a connection to register with Connect.
type Conn struct {
	// ID names the connection among the user's (a hash field, not a key):
	// non-empty, at most MaxConnIDLen bytes of UTF-8.
	ID string
	// Metadata is stored in the connection's JSON.
	Metadata Metadata
	// Status is taken when the user comes online with this connection
	// (e.g. Invisible for a user who chose to hide); a user already online
	// keeps their status. Empty means Online. Offline is not accepted.
	Status Status
	// Activity, if set, is stored as the presence's metadata.lastActivity
	// (seed 002: "typing", "idle", "active").
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

type userKeys struct{ presence, conns, index string }

func (t *Tracker) userKeys(op, user string) (userKeys, error) {
	p, err := presenceKey.Key(t.cfg.ns, user)
	if err != nil {
		return userKeys{}, fmt.Errorf("presence: %s: %w", op, err)
	}
	c, err := connsKey.Key(t.cfg.ns, user)
	if err != nil {
		return userKeys{}, fmt.Errorf("presence: %s: %w", op, err)
	}
	i, err := onlineKey.Key(t.cfg.ns, slotTag(keys.Slot(p)))
	if err != nil {
		return userKeys{}, fmt.Errorf("presence: %s: %w", op, err)
	}
	return userKeys{p, c, i}, nil
}

func checkText(op, what, s string, max int, required bool) error {
	switch {
	case required && s == "":
		return fmt.Errorf("presence: %s: %w: empty %s", op, ErrInvalidInput, what)
	case len(s) > max:
		return fmt.Errorf("presence: %s: %w: %s longer than %d bytes", op, ErrInvalidInput, what, max)
	case !utf8.ValidString(s):
		return fmt.Errorf("presence: %s: %w: %s is not valid UTF-8", op, ErrInvalidInput, what)
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

// args returns the ARGV prefix shared by the tracker scripts (see lib.lua).
func (t *Tracker) args(user, conn string, extra ...any) []any {
	p := t.cfg.profile
	idx := "1"
	if t.cfg.noIndex {
		idx = "0"
	}
	a := []any{user, conn, p.Format.arg(), ms(p.TTL), ms(p.Retention), t.cfg.channel, idx, t.cfg.layout.arg()}
	return append(a, extra...)
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
// Errors: keys.ErrInvalidKey (bad user ID), ErrInvalidInput (empty or long
// conn, metadata over the limit), ErrInvalidStatus, ErrTooManyConnections,
// keys.ErrCorrupt naming the key, or Redis errors. Nothing is written on
// input errors.
func (t *Tracker) Connect(ctx context.Context, user string, c Conn) (Result, error) {
	const op = "connect"
	conn, md := c.ID, c.Metadata
	k, err := t.userKeys(op, user)
	if err != nil {
		return Result{}, err
	}
	if err := checkText(op, "connection ID", conn, MaxConnIDLen, true); err != nil {
		return Result{}, err
	}
	st := c.Status
	if st == "" {
		st = Online
	}
	if !st.valid() || st == Offline {
		return Result{}, fmt.Errorf("presence: %s: %w %q", op, ErrInvalidStatus, c.Status)
	}
	for _, f := range []string{md.Device, md.UserAgent, md.IP, md.SocketID, c.Activity} {
		if err := checkText(op, "metadata", f, t.cfg.maxMeta, false); err != nil {
			return Result{}, err
		}
	}
	mdJSON, err := encodeJSON(md)
	if err != nil {
		return Result{}, fmt.Errorf("presence: %s: %w: %v", op, ErrInvalidInput, err)
	}
	if len(mdJSON)+len(c.Activity) > t.cfg.maxMeta {
		return Result{}, fmt.Errorf("presence: %s: %w: metadata of %d bytes exceeds %d", op, ErrInvalidInput, len(mdJSON)+len(c.Activity), t.cfg.maxMeta)
	}
	return t.run(ctx, op, k, connectScript, t.args(user, conn, mdJSON, string(st), c.Activity, t.cfg.maxConns))
}

// Heartbeat refreshes connection conn of user: its lastSeen, the user's
// presence lastSeen and the TTLs, in one atomic script (one round trip).
// Stale connections are pruned first. A connection that is not registered
// (never connected, disconnected, or already pruned as stale) gives
// ErrUnknownConnection and is not re-registered: the client must Connect
// again with its metadata. In that case Result still reports the user's
// state (the prune may have taken the user offline: Result.Changed).
func (t *Tracker) Heartbeat(ctx context.Context, user, conn string) (Result, error) {
	const op = "heartbeat"
	k, err := t.userKeys(op, user)
	if err != nil {
		return Result{}, err
	}
	if err := checkText(op, "connection ID", conn, MaxConnIDLen, true); err != nil {
		return Result{}, err
	}
	return t.run(ctx, op, k, heartbeatScript, t.args(user, conn))
}

// Disconnect removes connection conn of user, in one atomic script (one
// round trip), and marks the user offline if no live connection is left:
// the presence key then keeps status "offline" and lastSeen for the
// profile's Retention (or is deleted when it is zero), and an "offline"
// event is published. Removing an unknown connection is not an error.
// Result.Connections is the number left; Result.Changed that the user went
// offline.
func (t *Tracker) Disconnect(ctx context.Context, user, conn string) (Result, error) {
	const op = "disconnect"
	k, err := t.userKeys(op, user)
	if err != nil {
		return Result{}, err
	}
	if err := checkText(op, "connection ID", conn, MaxConnIDLen, true); err != nil {
		return Result{}, err
	}
	return t.run(ctx, op, k, disconnectScript, t.args(user, conn))
}

// SetStatus sets an online user's status (Online, Away, Busy or Invisible)
// in one atomic script (one round trip) and publishes the change as others
// see it (Invisible is published as "offline"). The status lasts while the
// user stays online; a user who comes back online later gets
// Conn.Status. A user with no live connection gives ErrOffline;
// Offline itself is not accepted (use Disconnect, or Invisible).
func (t *Tracker) SetStatus(ctx context.Context, user string, s Status) (Result, error) {
	const op = "set status"
	if !s.valid() || s == Offline {
		return Result{}, fmt.Errorf("presence: %s: %w %q", op, ErrInvalidStatus, s)
	}
	k, err := t.userKeys(op, user)
	if err != nil {
		return Result{}, err
	}
	return t.run(ctx, op, k, updateScript, t.args(user, "", string(s), ""))
}

// SetActivity sets an online user's metadata.lastActivity (seed 002:
// "typing", "idle", "active"), in one atomic script (one round trip). A user
// with no live connection gives ErrOffline.
func (t *Tracker) SetActivity(ctx context.Context, user, activity string) error {
	const op = "set activity"
	if err := checkText(op, "activity", activity, t.cfg.maxMeta, true); err != nil {
		return err
	}
	k, err := t.userKeys(op, user)
	if err != nil {
		return err
	}
	_, err = t.run(ctx, op, k, updateScript, t.args(user, "", "", activity))
	return err
}

func (t *Tracker) run(ctx context.Context, op string, k userKeys, s *script.Script, args []any) (Result, error) {
	v, err := s.Run(ctx, t.c, []string{k.presence, k.conns, k.index}, args...).Result()
	if err != nil {
		return Result{}, fmt.Errorf("presence: %s %s: %w", op, k.presence, err)
	}
	a, err := reply.Slice(v, -1)
	if err != nil {
		return Result{}, fmt.Errorf("presence: %s %s: %w", op, k.presence, err)
	}
	code := ""
	if len(a) > 0 {
		code, _ = a[0].(string)
	}
	if code == "corrupt" && len(a) == 3 {
		key, _ := a[1].(string)
		field, _ := a[2].(string)
		return Result{}, fmt.Errorf("presence: %s: %w", op, corrupt(key, field))
	}
	if len(a) != 4 {
		return Result{}, fmt.Errorf("presence: %s %s: %w: %d elements", op, k.presence, reply.ErrUnexpected, len(a))
	}
	n, err1 := reply.Int64(a[1])
	ch, err2 := reply.Int64(a[2])
	st, err3 := reply.String(a[3])
	if err := firstErr(err1, err2, err3); err != nil {
		return Result{}, fmt.Errorf("presence: %s %s: %w", op, k.presence, err)
	}
	r := Result{Connections: int(n), Changed: ch == 1, Status: Status(st)}
	switch code {
	case "ok":
		return r, nil
	case "unknown":
		return r, fmt.Errorf("presence: %s %s: %w", op, k.presence, ErrUnknownConnection)
	case "toomany":
		return r, fmt.Errorf("presence: %s %s: %w (%d live)", op, k.presence, ErrTooManyConnections, n)
	case "offline":
		return r, fmt.Errorf("presence: %s %s: %w", op, k.presence, ErrOffline)
	}
	return Result{}, fmt.Errorf("presence: %s %s: %w: code %q", op, k.presence, reply.ErrUnexpected, code)
}

// corrupt is the error for a script's {"corrupt", key, field} reply: field
// names the connection without a lastSeen, or is empty for a presence JSON
// that does not decode.
func corrupt(key, field string) error {
	if field != "" {
		return keys.Corrupt(key, fmt.Errorf("connection %q does not decode or has no lastSeen", field))
	}
	return keys.Corrupt(key, errors.New("presence JSON does not decode or has an unknown status"))
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
