package presence

import (
	"errors"

	"github.com/redschema/redschema/internal/call"
)

// Errors returned by this package. Match them with errors.Is: they come
// wrapped in an error that names the operation and the key. A network
// failure, a timeout or a cluster error is returned as such, never as one
// of these.
var (
	// ErrUnknownConnection is returned by Heartbeat for a connection that
	// is not registered: never connected, disconnected, or pruned after it
	// stopped heartbeating for the profile's TTL. The client must Connect
	// again; Heartbeat never registers a connection (it has no metadata to
	// do so).
	ErrUnknownConnection = errors.New("presence: unknown connection")
	// ErrOffline is returned by SetStatus and SetActivity for a user with
	// no live connection.
	ErrOffline = errors.New("presence: user is offline")
	// ErrTooManyConnections is returned by Connect when the user already
	// has the maximum number of live connections (WithMaxConnections);
	// nothing is registered.
	ErrTooManyConnections = errors.New("presence: too many connections")
	// ErrNotMember is returned by Channels.Update for a user who is not a
	// member of the channel.
	ErrNotMember = errors.New("presence: not a channel member")
	// ErrNoIndex is returned by OnlineNow, OnlineCount, Sweep and
	// RunSweeper on a tracker built WithoutOnlineIndex.
	ErrNoIndex = errors.New("presence: online index disabled")
	// ErrInvalid marks bad input, before anything is written: a nil client
	// or one without ContextTimeoutEnabled, a bad option or profile, an
	// empty or oversize ID, a status the operation does not take, metadata
	// or a username over its limit, a duration or count out of its bounds.
	// A value that cannot be a key segment also matches keys.ErrInvalid.
	ErrInvalid = errors.New("presence: invalid argument")
)

// pkg is the package's error vocabulary for the call layer.
var pkg = &call.Pkg{Name: "presence", ErrInvalid: ErrInvalid}
