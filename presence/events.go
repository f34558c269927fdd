package presence

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redschema/redschema/internal/sub"
)

// Event is a presence change as other users see it, published by the
// scripts of Connect, Heartbeat, Disconnect, SetStatus and Sweep on the
// tracker's Channel when the public status changes: offline ->
// online/away/busy, back to offline, or between online, away and busy.
// Invisible users are reported as offline, so going invisible publishes
// "offline" and nothing is published while they come and go. The payload
// is JSON {"userId","status","previous","at"} with "at" in Unix
// milliseconds (server time). A user whose devices all stop without
// Disconnect goes offline by key expiry, which publishes nothing by
// itself: Sweep (RunSweeper) publishes that offline event, with "at" the
// expiry, within about one sweep cycle.
//
// An event is published once, by the run of the request that made the
// change: a replayed request (go-redis resending it after a lost reply)
// publishes nothing.
type Event struct {
	UserID   string    // "userId"
	Status   Status    // "status": the public status now (never Invisible)
	Previous Status    // "previous": the public status before
	At       time.Time // "at": server time of the change
}

type eventWire struct {
	UserID   *string `json:"userId"`
	Status   Status  `json:"status"`
	Previous Status  `json:"previous"`
	At       *int64  `json:"at"`
}

// decodeEvent decodes an event payload; the subscription names the channel
// in the error.
func decodeEvent(payload string) (Event, error) {
	var w eventWire
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		return Event{}, err
	}
	switch {
	case w.UserID == nil || *w.UserID == "":
		return Event{}, errors.New("missing userId")
	case !w.Status.valid() || w.Status == Invisible || !w.Previous.valid() || w.Previous == Invisible:
		return Event{}, errors.New("status or previous not online, away, busy or offline")
	case w.At == nil || *w.At < 0 || *w.At > latest(0):
		return Event{}, errors.New("at is not a time")
	}
	return Event{UserID: *w.UserID, Status: w.Status, Previous: w.Previous, At: fromMs(*w.At)}, nil
}

// Subscription receives a tracker's events. Pub/sub delivery is at most
// once: events published while no subscription is connected are lost, so
// clients should reconcile with GetMany after (re)subscribing. A
// Subscription holds one connection and a receiving goroutine (go-redis
// resubscribes after a broken connection) until Close. Up to 100 events
// wait in a buffer for Next; when it is full, the next event is dropped if
// no Next makes room within a minute. It is safe for one reader at a time.
type Subscription struct {
	s  *sub.Subscription[Event]
	ch string
}

// Subscribe subscribes to the tracker's events channel and waits for the
// server's confirmation, so no event published after it returns is missed.
// ctx bounds only that wait. Close the subscription when done; it releases
// the connection and stops the receiving goroutine.
func (t *Tracker) Subscribe(ctx context.Context) (*Subscription, error) {
	s, err := sub.Open(ctx, t.run.Client(), []string{t.channel}, decodeEvent, 0)
	if err != nil {
		return nil, pkg.Fail("subscribe", t.channel, nil, err)
	}
	return &Subscription{s: s, ch: t.channel}, nil
}

// Next blocks until the next event, ctx is done (its error is returned,
// wrapped, and the subscription stays usable) or the subscription is
// closed and drained (an error matching redis.ErrClosed). A message that
// does not decode is reported, not delivered: Next returns an error
// matching keys.ErrCorrupt that names the channel, and the next call goes
// on with the following message.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	m, err := s.s.Next(ctx)
	if err != nil {
		return Event{}, pkg.Fail("events", s.ch, nil, err)
	}
	if m.Err != nil {
		return Event{}, pkg.Fail("events", s.ch, nil, m.Err)
	}
	return m.Value, nil
}

// Events delivers the subscription's events on a channel until ctx is
// done, then closes the subscription and the channel: the way to consume
// events in a range loop. A message that does not decode is passed to
// malformed (if not nil) as an error matching keys.ErrCorrupt that names
// the channel, and skipped. Do not call Next after Events.
func (s *Subscription) Events(ctx context.Context, malformed func(error)) <-chan Event {
	return s.s.Values(ctx, 0, func(m sub.Msg[Event]) {
		if malformed != nil {
			malformed(pkg.Fail("events", s.ch, nil, m.Err))
		}
	})
}

// Close unsubscribes, releases the connection and stops the receiving
// goroutine; Next then returns the events already buffered, if any, and
// after them an error matching redis.ErrClosed.
func (s *Subscription) Close() error { return s.s.Close() }
