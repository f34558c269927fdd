package presence

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed connections.lua
	connectionsLua    string
	connectionsScript = script.New(indexLua, libLua, connectionsLua)
)

// Connection is one live connection of a user, as stored in the
// connections hash (or, with LayoutSingleKey, the presence JSON).
type Connection struct {
	ID          string    // the connection ID given to Connect
	ConnectedAt time.Time // "connectedAt": server time of its Connect
	LastSeen    time.Time // "lastSeen": server time of its last Connect or Heartbeat
	Metadata    Metadata  // "metadata", as given to Connect
}

type connWire struct {
	ConnectedAt int64    `json:"connectedAt"`
	LastSeen    *int64   `json:"lastSeen"`
	Metadata    Metadata `json:"metadata"`
}

// Connections returns user's live connections, sorted by ID, with one
// read-only script (one round trip) over the connections hash or, with
// LayoutSingleKey, the presence key: connections whose lastSeen is the
// profile's TTL old (server time) are left out even before a write prunes
// them. A user with none gives an empty slice. A value that does not decode
// gives an error matching keys.ErrCorrupt naming the key and connection.
func (t *Tracker) Connections(ctx context.Context, user string) ([]Connection, error) {
	const op = "connections"
	k, err := t.userKeys(op, user)
	if err != nil {
		return nil, err
	}
	key := k.conns
	if t.cfg.layout == LayoutSingleKey {
		key = k.presence
	}
	v, err := connectionsScript.Run(ctx, t.c, []string{k.presence, k.conns, k.index}, t.args(user, "")...).Result()
	if err != nil {
		return nil, fmt.Errorf("presence: %s %s: %w", op, key, err)
	}
	flat, err := reply.Strings(v)
	if err != nil || len(flat) == 0 {
		return nil, fmt.Errorf("presence: %s %s: %w", op, key, errors.Join(reply.ErrUnexpected, err))
	}
	if flat[0] == "corrupt" && len(flat) == 3 {
		return nil, fmt.Errorf("presence: %s: %w", op, corrupt(flat[1], flat[2]))
	}
	if flat[0] != "ok" || len(flat)%2 != 1 {
		return nil, fmt.Errorf("presence: %s %s: %w: code %q, %d elements", op, key, reply.ErrUnexpected, flat[0], len(flat))
	}
	out := make([]Connection, 0, len(flat)/2)
	for i := 1; i < len(flat); i += 2 {
		c, err := decodeConn(key, flat[i], flat[i+1])
		if err != nil {
			return nil, fmt.Errorf("presence: %s: %w", op, err)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func decodeConn(key, id, s string) (Connection, error) {
	var w connWire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return Connection{}, keys.Corrupt(key, fmt.Errorf("connection %q: %w", id, err))
	}
	if w.LastSeen == nil {
		return Connection{}, keys.Corrupt(key, fmt.Errorf("connection %q has no lastSeen", id))
	}
	return Connection{ID: id, ConnectedAt: fromMs(w.ConnectedAt), LastSeen: fromMs(*w.LastSeen), Metadata: w.Metadata}, nil
}
