package presence

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed connections.lua
	connectionsLua string

	connectionsOp = pkg.Declare("connections", connectionsLua, userKeyTemplates[:3], call.Uses(libLua, call.Batched, call.JSONStr), call.Shared())
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
	ConnectedAt *int64   `json:"connectedAt"`
	LastSeen    *int64   `json:"lastSeen"`
	Metadata    Metadata `json:"metadata"`
}

// Connections returns user's live connections, sorted by ID, with one
// read-only script (one round trip) over the connections hash or, with
// LayoutSingleKey, the presence key: connections whose lastSeen is the
// profile's TTL old (server time) are left out even before a write prunes
// them. A user with none gives an empty slice. A connection this package
// did not write (JSON that does not decode, a lastSeen or connectedAt that
// is missing, negative or more than an hour ahead of server time)
// gives an error matching keys.ErrCorrupt naming the key and connection.
func (t *Tracker) Connections(ctx context.Context, user string) ([]Connection, error) {
	const op = "connections"
	k, err := t.userKeys(op, user)
	if err != nil {
		return nil, err
	}
	key := k[1]
	if t.opt.layout == LayoutSingleKey {
		key = k[0]
	}
	rep, err := t.run.Run(ctx, connectionsOp, k[:3], t.args(user, "", "")...)
	if err != nil {
		return nil, err
	}
	return decodeConns(op, key, &rep)
}

func decodeConn(key, id, s string) (Connection, error) {
	var w connWire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return Connection{}, keys.Corrupt(key, fmt.Errorf("connection %q: %w", id, err))
	}
	switch {
	case w.LastSeen == nil || *w.LastSeen < 0 || *w.LastSeen > latest(0):
		return Connection{}, keys.Corrupt(key, fmt.Errorf("connection %q has no valid lastSeen", id))
	case w.ConnectedAt == nil || *w.ConnectedAt < 0 || *w.ConnectedAt > latest(0):
		return Connection{}, keys.Corrupt(key, fmt.Errorf("connection %q has no valid connectedAt", id))
	}
	return Connection{ID: id, ConnectedAt: fromMs(*w.ConnectedAt), LastSeen: fromMs(*w.LastSeen), Metadata: w.Metadata}, nil
}
