package chat

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/redschema/redschema/internal/sub"
)

// EventKind names an event and the channel it is published on.
type EventKind string

// The event kinds, each on its own channel chat:{tag}:events:{kind}.
const (
	// EventMessage: a message was appended (Event.Message).
	EventMessage EventKind = "message"
	// EventAssigned: a conversation's admin changed; Admin "" means it
	// went to the backlog. Reason: "opened" (entered the backlog),
	// "backlog" (handed out), "explicit" (Assign), "transfer",
	// "unassigned", "offline" (its admin went offline or expired),
	// "removed" (its admin left the roster).
	EventAssigned EventKind = "assigned"
	// EventResolved: a conversation closed. Reason "resolved" or
	// "expired".
	EventResolved EventKind = "resolved"
	// EventRead: a conversation left the unread queue. Reason "read"
	// (MarkRead) or "reply" (an admin message).
	EventRead EventKind = "read"
)

// Event is one change published by the script that made it, once: a
// replayed request publishes nothing. The payload is JSON
// {"type","conversation_id","admin_id","previous","reason","at"} with
// "at" in Unix ms (server time), plus "message" for message events.
type Event struct {
	Kind         EventKind
	Conversation string
	Admin        string // the conversation's admin after the change ("" for none)
	Previous     string // EventAssigned: the admin before ("" for none)
	Reason       string
	At           time.Time
	Message      *Message // EventMessage only
}

// eventKinds are the kinds in the order of Chat.chans.
var eventKinds = [...]EventKind{EventMessage, EventAssigned, EventResolved, EventRead}

type eventWire struct {
	Type         EventKind `json:"type"`
	Conversation *string   `json:"conversation_id"`
	Admin        string    `json:"admin_id"`
	Previous     string    `json:"previous"`
	Reason       string    `json:"reason"`
	At           *int64    `json:"at"`
	Message      *Message  `json:"message"`
}

func decodeEvent(payload string) (Event, error) {
	var w eventWire
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		return Event{}, err
	}
	switch {
	case w.Type != EventMessage && w.Type != EventAssigned && w.Type != EventResolved && w.Type != EventRead:
		return Event{}, errors.New("unknown event type")
	case w.Conversation == nil || *w.Conversation == "":
		return Event{}, errors.New("missing conversation_id")
	case w.At == nil || *w.At < 0:
		return Event{}, errors.New("at is not a time")
	case w.Type == EventMessage && w.Message == nil:
		return Event{}, errors.New("message event without a message")
	}
	return Event{Kind: w.Type, Conversation: *w.Conversation, Admin: w.Admin, Previous: w.Previous,
		Reason: w.Reason, At: fromMs(*w.At), Message: w.Message}, nil
}

// Subscription receives a deployment's events. Pub/sub is at most once:
// events published while it is not connected are lost, so a client
// re-reads what it shows (Unread, Backlog, Dashboard) after subscribing.
// It holds a connection and a goroutine until Close; it is safe for one
// reader at a time.
type Subscription struct {
	s *sub.Subscription[Event]
}

// Subscribe subscribes to the channels of kinds (all four when none is
// given) and waits for the server's confirmation, so no event published
// after it returns is missed; ctx bounds only that wait.
func (c *Chat) Subscribe(ctx context.Context, kinds ...EventKind) (*Subscription, error) {
	const op = "subscribe"
	if len(kinds) == 0 {
		kinds = eventKinds[:]
	}
	var chans []string
	for _, k := range kinds {
		j := slices.Index(eventKinds[:], k)
		if j < 0 {
			return nil, pkg.Invalidf(op, "event kind %.32q", string(k))
		}
		chans = append(chans, c.chans[j])
	}
	s, err := sub.Open(ctx, c.run.Client(), chans, decodeEvent, 0)
	if err != nil {
		return nil, pkg.Fail(op, chans[0], nil, err)
	}
	return &Subscription{s: s}, nil
}

// Next blocks until the next event, ctx is done (its error is returned,
// wrapped; the subscription stays usable), or the subscription is closed
// and drained (an error matching redis.ErrClosed). A message that does
// not decode is returned as an error matching keys.ErrCorrupt naming its
// channel, and the next call goes on.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	m, err := s.s.Next(ctx)
	if err != nil {
		return Event{}, pkg.Fail("events", "", nil, err)
	}
	if m.Err != nil {
		return Event{}, pkg.Fail("events", m.Channel, nil, m.Err)
	}
	return m.Value, nil
}

// Events delivers the events on a channel until ctx is done, then closes
// the subscription and the channel. A message that does not decode is
// passed to malformed (if not nil) as an error matching keys.ErrCorrupt
// naming its channel, and skipped. Do not call Next after Events.
func (s *Subscription) Events(ctx context.Context, malformed func(error)) <-chan Event {
	return s.s.Values(ctx, 0, func(m sub.Msg[Event]) {
		if malformed != nil {
			malformed(pkg.Fail("events", m.Channel, nil, m.Err))
		}
	})
}

// Close unsubscribes and releases the connection and the goroutine.
func (s *Subscription) Close() error { return s.s.Close() }
