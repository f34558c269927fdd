package presence

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redschema/redschema/internal/sub"
)

// ChannelEventType names what a ChannelEvent reports.
type ChannelEventType string

// The channel event types.
const (
	// Joined: a user's first device joined; the event has their data.
	Joined ChannelEventType = "join"
	// Left: a user's last device left (Reason "leave") or expired
	// without a heartbeat (Reason "timeout").
	Left ChannelEventType = "leave"
	// Updated: a member's data changed (Update, or a Join of another
	// device with other data); the event has the new data.
	Updated ChannelEventType = "update"
	// Occupancy: the member count changed; the event has the count. At
	// most one per WithOccupancyInterval per channel: a change within the
	// interval is published after it ends, by the next Join, Leave,
	// Update or Heartbeat on the channel or by Sweep (so within one
	// heartbeat interval in a channel with live members, one sweep cycle
	// at worst).
	Occupancy ChannelEventType = "occupancy"
)

// ChannelEvent is a change of a channel's presence, published on the
// channel's events channel (presence:channel:events:{channel}) by the
// script that made it, in the same atomic step: exactly once per join and
// per leave, silent leaves included, and never by a replayed request. The
// payload is JSON {"type","userId","data","reason","count","at"} ("at" in
// Unix ms, server time), members present per type.
type ChannelEvent[T any] struct {
	Type   ChannelEventType
	UserID string    // Joined, Left, Updated
	Data   T         // Joined, Updated
	Reason string    // Left: "leave" or "timeout"
	Count  int       // Occupancy
	At     time.Time // server time of the change
}

type chanEventWire struct {
	Type   ChannelEventType `json:"type"`
	UserID string           `json:"userId"`
	Data   json.RawMessage  `json:"data"`
	Reason string           `json:"reason"`
	Count  *int             `json:"count"`
	At     *int64           `json:"at"`
}

func decodeChanEvent[T any](payload string) (ChannelEvent[T], error) {
	var w chanEventWire
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		return ChannelEvent[T]{}, err
	}
	if w.At == nil || *w.At < 0 || *w.At > latest(0) {
		return ChannelEvent[T]{}, errors.New("at is not a time")
	}
	e := ChannelEvent[T]{Type: w.Type, UserID: w.UserID, Reason: w.Reason, At: fromMs(*w.At)}
	switch w.Type {
	case Joined, Updated:
		if w.UserID == "" || len(w.Data) == 0 {
			return ChannelEvent[T]{}, errors.New("missing userId or data")
		}
		if err := json.Unmarshal(w.Data, &e.Data); err != nil {
			return ChannelEvent[T]{}, err
		}
	case Left:
		if w.UserID == "" || (w.Reason != "leave" && w.Reason != "timeout") {
			return ChannelEvent[T]{}, errors.New("missing userId or reason")
		}
	case Occupancy:
		if w.Count == nil || *w.Count < 0 {
			return ChannelEvent[T]{}, errors.New("missing count")
		}
		e.Count = *w.Count
	default:
		return ChannelEvent[T]{}, errors.New("unknown type")
	}
	return e, nil
}

// ChannelSubscription receives one channel's events. Delivery is at most
// once, as pub/sub's (see Subscription): reconcile with Members after
// (re)subscribing. It holds one connection and a goroutine until Close.
type ChannelSubscription[T any] struct {
	s  *sub.Subscription[ChannelEvent[T]]
	ch string
}

// Subscribe subscribes to channel's events and waits for the server's
// confirmation, so no event published after it returns is missed. ctx
// bounds only that wait. On a cluster the subscription is on the node of
// the channel's slot, where the scripts publish, so events arrive in the
// order the scripts ran.
func (c *Channels[T]) Subscribe(ctx context.Context, channel string) (*ChannelSubscription[T], error) {
	const op = "subscribe"
	ch, err := pkg.Key(op, chanEventsChannel, c.opt.ns, channel)
	if err != nil {
		return nil, err
	}
	s, err := sub.Open(ctx, c.run.Client(), []string{ch}, decodeChanEvent[T], 0)
	if err != nil {
		return nil, pkg.Fail(op, ch, nil, err)
	}
	return &ChannelSubscription[T]{s: s, ch: ch}, nil
}

// Next blocks until the next event, ctx is done or the subscription is
// closed and drained (an error matching redis.ErrClosed). A message that
// does not decode gives an error matching keys.ErrCorrupt naming the
// channel; the next call goes on.
func (s *ChannelSubscription[T]) Next(ctx context.Context) (ChannelEvent[T], error) {
	m, err := s.s.Next(ctx)
	if err != nil {
		return ChannelEvent[T]{}, pkg.Fail("channel events", s.ch, nil, err)
	}
	if m.Err != nil {
		return ChannelEvent[T]{}, pkg.Fail("channel events", s.ch, nil, m.Err)
	}
	return m.Value, nil
}

// Close unsubscribes and releases the connection.
func (s *ChannelSubscription[T]) Close() error { return s.s.Close() }
