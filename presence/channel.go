package presence

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed channel_join.lua
	channelJoinLua string
	//go:embed channel_join_fast.lua
	channelJoinFastLua string
	//go:embed channel_leave.lua
	channelLeaveLua string
	//go:embed channel_leave_fast.lua
	channelLeaveFastLua string
	//go:embed channel_update.lua
	channelUpdateLua string
	//go:embed channel_heartbeat.lua
	channelHeartbeatLua string
	//go:embed channel_heartbeat_fast.lua
	channelHeartbeatFastLua string
	//go:embed channel_settle.lua
	channelSettleLua string
	//go:embed channel_due.lua
	channelDueLua string

	chanKeys     = []*keys.Template{chanMembersKey, chanDevicesKey, chanOccKey, chanDueKey, chanRequestsKey}
	chanJoinOp   = pkg.Declare("join", channelJoinLua, chanKeys, call.Head(channelJoinFastLua), call.Uses(libLua, call.Batched, call.JSONStr), call.On(call.Limit, ErrTooManyConnections), call.Shared())
	chanLeaveOp  = pkg.Declare("leave", channelLeaveLua, chanKeys, call.Head(channelLeaveFastLua), call.Uses(libLua, call.Batched, call.JSONStr), call.Shared())
	chanUpdateOp = pkg.Declare("update member", channelUpdateLua, chanKeys, call.Uses(libLua, call.Batched, call.JSONStr), call.On(call.None, ErrNotMember), call.Shared())
	chanBeatOp   = pkg.Declare("channel heartbeat", channelHeartbeatLua, chanKeys[:4], call.Head(channelHeartbeatFastLua), call.Uses(libLua, call.Batched, call.JSONStr),
		call.On(call.None, ErrUnknownConnection), call.Shared())
	chanSettleOp = pkg.Declare("channel sweep", channelSettleLua, chanKeys[:4], call.Uses(libLua, call.Batched, call.JSONStr))
	chanDueOp    = pkg.Declare("channel due", channelDueLua, []*keys.Template{chanDueKey})
)

// Channels tracks who is in which channel (a room, a document, a chat):
// members are users, deduplicated across their devices, so a user with
// three tabs in a channel is one member; each member carries data of type
// T (JSON-encoded). A user joins with their first device in and leaves
// with their last device out, whether by Leave or silently (the device
// stopped heartbeating), and each join and leave is published exactly
// once on the channel's events channel (see ChannelEvent). It is safe for
// concurrent use; create one per process, namespace and T, and share it.
//
// Channel presence is independent of a Tracker: a device calls Join once
// per channel and Heartbeat per channel on its heartbeat tick (calls made
// at once share pipelines), next to Tracker.Heartbeat. See "Channel
// presence" in docs/presence.md for the layout and why it works on a
// cluster.
type Channels[T any] struct {
	run    *call.Runner
	opt    options
	fixed  []any // ARGV[3..5]
	loaded atomic.Bool
}

// NewChannels returns a Channels over rdb, configured by the same options
// as New: the namespace, the profile's TTL (a device stops being in a
// channel a TTL after its last Join or Heartbeat) and sweep window,
// WithMaxConnections (devices per user per channel), WithMaxMetadata (the
// member data's encoded size), WithPipelining and WithOccupancyInterval.
// It fails with ErrInvalid on a nil client, a go-redis client without
// ContextTimeoutEnabled or a bad option; it does not contact Redis.
func NewChannels[T any](rdb redis.UniversalClient, opts ...Option) (*Channels[T], error) {
	o, err := call.Configure(pkg, "new channels", rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	occ := int64(0)
	switch {
	case o.occEvery == 0:
		occ = unit.MsCeil(defaultOccupancyInterval)
	case o.occEvery > 0:
		occ = unit.MsCeil(o.occEvery)
	}
	p := o.profile
	window := p.Retention
	if window == 0 {
		window = p.TTL
	}
	return &Channels[T]{
		run:   call.NewRunner(rdb, o.lanes),
		opt:   o,
		fixed: []any{unit.MsCeil(p.TTL), unit.MsCeil(window), occ},
	}, nil
}

// Member is one member of a channel.
type Member[T any] struct {
	UserID  string
	Devices int // the user's devices in the channel, at least 1
	Data    T   // the data of the user's latest Join or Update
}

// JoinResult is the outcome of Join and Leave.
type JoinResult struct {
	// Changed reports that the user became a member (Join: their first
	// device) or stopped being one (Leave: their last device).
	Changed bool
	// Devices is the user's devices in the channel after the call.
	Devices int
	// Members is the channel's member count after the call.
	Members int
}

// chanKeys are the keys of a channel's scripts, in KEYS order, and its
// events channel.
func (c *Channels[T]) keysOf(op, channel, user string) ([]string, string, error) {
	k := make([]string, 5)
	var err error
	if k[0], err = pkg.Key(op, chanMembersKey, c.opt.ns, channel); err != nil {
		return nil, "", err
	}
	if k[1], err = pkg.Key(op, chanDevicesKey, c.opt.ns, channel); err != nil {
		return nil, "", err
	}
	if k[2], err = pkg.Key(op, chanOccKey, c.opt.ns, channel); err != nil {
		return nil, "", err
	}
	if k[3], err = pkg.Key(op, chanDueKey, c.opt.ns, keys.SlotTag(keys.Slot(k[0]))); err != nil {
		return nil, "", err
	}
	if user != "" {
		if k[4], err = pkg.Key(op, chanRequestsKey, c.opt.ns, channel, user); err != nil {
			return nil, "", err
		}
	} else {
		k = k[:4]
	}
	ev, err := pkg.Key(op, chanEventsChannel, c.opt.ns, channel)
	return k, ev, err
}

func (c *Channels[T]) args(channel, events, user, conn, reqID string, extra ...any) []any {
	a := make([]any, 0, 9+len(extra))
	a = append(a, channel, events)
	a = append(a, c.fixed...)
	a = append(a, user, conn, reqID, replayMs)
	return append(a, extra...)
}

// user checks a user ID as a key segment (the request memo's key has it).
func (c *Channels[T]) user(op, channel, user, conn string, needConn bool) ([]string, string, error) {
	if user == "" {
		return nil, "", pkg.Invalidf(op, "empty user ID")
	}
	k, ev, err := c.keysOf(op, channel, user)
	if err != nil {
		return nil, "", err
	}
	if needConn {
		if err := checkText(op, "connection ID", conn, maxConnIDLen, true); err != nil {
			return nil, "", err
		}
	}
	return k, ev, nil
}

func (c *Channels[T]) encode(op string, data T) (string, error) {
	s, err := encodeJSON(data)
	if err != nil {
		return "", pkg.Invalid(op, err)
	}
	if len(s) > c.opt.maxMeta {
		return "", pkg.Invalidf(op, "member data of %d bytes exceeds %d", len(s), c.opt.maxMeta)
	}
	return s, nil
}

func joinResult(rep call.Reply, err error) (JoinResult, error) {
	if err != nil && (rep.Len() == 0 || rep.Status == call.Corrupt || rep.Status == call.Invalid) {
		return JoinResult{}, err
	}
	r := JoinResult{Changed: rep.Int(0) == 1, Devices: int(rep.Int(1)), Members: int(rep.Int(2))}
	if e := rep.Err(); e != nil {
		return JoinResult{}, e
	}
	return r, err
}

// Join adds device conn of user to channel with the member data data, in
// one atomic script (one round trip), for the profile's TTL (Heartbeat
// extends it). The user's first device makes them a member and publishes
// a "join" event with the data; a later device (or a repeated Join of the
// same one) only replaces the data, publishing an "update" event if it
// changed. Devices of the channel whose TTL has passed are removed first,
// with their silent leaves announced.
//
// Under retry: a replay of the request within the replay window (3 min) reports the
// first run's JoinResult and changes and publishes nothing.
//
// Errors: ErrInvalid before anything is written (an empty or bad channel
// or user ID, also keys.ErrInvalid; an empty or long connection ID;
// data whose JSON exceeds WithMaxMetadata), ErrTooManyConnections when the
// user already has WithMaxConnections other devices in the channel
// (nothing written), keys.ErrCorrupt naming the key, or Redis errors.
func (c *Channels[T]) Join(ctx context.Context, channel, user, conn string, data T) (JoinResult, error) {
	const op = "join"
	k, ev, err := c.user(op, channel, user, conn, true)
	if err != nil {
		return JoinResult{}, err
	}
	d, err := c.encode(op, data)
	if err != nil {
		return JoinResult{}, err
	}
	return joinResult(c.run.Run(ctx, chanJoinOp, k, c.args(channel, ev, user, conn, newRequestID(), d, c.opt.maxConns)...))
}

// Leave removes device conn of user from channel, in one atomic script
// (one round trip). The user's last device ends the membership and
// publishes a "leave" event (reason "leave"). Removing a device that is
// not in the channel is not an error. A replay of the request within
// the replay window (3 min) reports the first run's JoinResult and changes and
// publishes nothing.
func (c *Channels[T]) Leave(ctx context.Context, channel, user, conn string) (JoinResult, error) {
	const op = "leave"
	k, ev, err := c.user(op, channel, user, conn, true)
	if err != nil {
		return JoinResult{}, err
	}
	return joinResult(c.run.Run(ctx, chanLeaveOp, k, c.args(channel, ev, user, conn, newRequestID())...))
}

// Heartbeat keeps device conn of user in channel for another profile TTL,
// in one atomic script (one round trip). A device that is not in the
// channel (never joined, left, or expired: its TTL passed without a
// heartbeat) gives ErrUnknownConnection and is not added again: Join
// again. It also publishes a pending occupancy event whose interval has
// ended. Running it twice is running it once. Heartbeats share pipelines
// with concurrent calls (auto-pipelining, see WithPipelining): a device in
// many channels heartbeats them all at once, in about one round trip.
func (c *Channels[T]) Heartbeat(ctx context.Context, channel, user, conn string) error {
	const op = "channel heartbeat"
	k, ev, err := c.user(op, channel, user, conn, true)
	if err != nil {
		return err
	}
	rep, err := c.run.Run(ctx, chanBeatOp, k[:4], c.args(channel, ev, user, conn, "")...)
	if err != nil {
		return err
	}
	return rep.Err()
}

// Update replaces the data of member user of channel, in one atomic script
// (one round trip), publishing an "update" event if it changed; it
// reports whether it did. ErrNotMember for a user who is not a member. A
// replay of the request within the replay window (3 min) reports the first run's
// answer and changes nothing.
func (c *Channels[T]) Update(ctx context.Context, channel, user string, data T) (bool, error) {
	const op = "update member"
	k, ev, err := c.user(op, channel, user, "", false)
	if err != nil {
		return false, err
	}
	d, err := c.encode(op, data)
	if err != nil {
		return false, err
	}
	rep, err := c.run.Run(ctx, chanUpdateOp, k, c.args(channel, ev, user, "", newRequestID(), d)...)
	if err != nil {
		return false, err
	}
	n := rep.Int(0)
	return n == 1, rep.Err()
}

// Count returns channel's member count: one HLEN, O(1) however many
// members and devices, sent in the Channels' shared pipelines with
// concurrent calls (see WithPipelining). It counts the members the events have announced
// (joins minus leaves): a member whose devices all stopped silently is
// counted until their leave is announced (by the next write to the
// channel or by Sweep).
func (c *Channels[T]) Count(ctx context.Context, channel string) (int, error) {
	const op = "count"
	k, err := pkg.Key(op, chanMembersKey, c.opt.ns, channel)
	if err != nil {
		return 0, err
	}
	cmd := redis.NewIntCmd(ctx, "hlen", k)
	if err := c.run.Read(ctx, k, cmd); err != nil {
		return 0, pkg.Wrap(ctx, op, k, err)
	}
	return int(cmd.Val()), nil
}

// Members returns channel's members sorted by user ID: one HGETALL,
// sent as Count's HLEN is. Like Count, it lists the members the events
// have announced.
// keys.ErrCorrupt, naming the key, for a member value this package did
// not write or data that does not decode into T.
func (c *Channels[T]) Members(ctx context.Context, channel string) ([]Member[T], error) {
	const op = "members"
	k, err := pkg.Key(op, chanMembersKey, c.opt.ns, channel)
	if err != nil {
		return nil, err
	}
	cmd := redis.NewMapStringStringCmd(ctx, "hgetall", k)
	if err := c.run.Read(ctx, k, cmd); err != nil {
		return nil, pkg.Wrap(ctx, op, k, err)
	}
	all := cmd.Val()
	users := slices.Sorted(maps.Keys(all))
	out := make([]Member[T], len(users))
	for i, u := range users {
		if err := decodeMember(&out[i], k, u, all[u]); err != nil {
			return nil, pkg.Fail(op, k, nil, err)
		}
	}
	return out, nil
}

// decodeDevice splits a device member "<len(user)>:<user><conn>".
func decodeDevice(dev string) (user, conn string, err error) {
	n, rest, ok := strings.Cut(dev, ":")
	l, e := strconv.Atoi(n)
	if !ok || e != nil || l < 1 || l > len(rest) || n != strconv.Itoa(l) {
		return "", "", fmt.Errorf("device %.64q is not \"<len(user)>:<user><conn>\"", dev)
	}
	return rest[:l], rest[l:], nil
}

// decodeMember decodes member user's value "<devices>:<data JSON>" into
// m.
func decodeMember[T any](m *Member[T], key, user, v string) error {
	n, data, ok := strings.Cut(v, ":")
	d, err := strconv.Atoi(n)
	if !ok || err != nil || d < 1 || n != strconv.Itoa(d) {
		return keys.Corrupt(key, fmt.Errorf("member %q: value is not \"<devices>:<data JSON>\"", user))
	}
	m.UserID, m.Devices = user, d
	if err := json.Unmarshal([]byte(data), &m.Data); err != nil {
		return keys.Corrupt(key, fmt.Errorf("member %q: data: %w", user, err))
	}
	return nil
}
