package presence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
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
	At       int64   `json:"at"`
}

// Subscription receives a tracker's events. Pub/sub delivery is at most
// once: events published while no subscription is connected are lost, so
// clients should reconcile with GetMany after (re)subscribing. A
// Subscription holds one connection and a receiving goroutine (go-redis's
// PubSub channel, which pings and reconnects a broken connection) until
// Close. Up to 100 events wait in a buffer for Next; when it is full, the
// next event is dropped if no Next makes room within a minute.
type Subscription struct {
	ps   *redis.PubSub
	msgs <-chan *redis.Message
	ch   string
}

// Subscribe subscribes to the tracker's events channel and waits for the
// server's confirmation, so no event published after it returns is missed.
// ctx bounds only that wait. Close the subscription when done; it releases
// the connection and stops the receiving goroutine.
func (t *Tracker) Subscribe(ctx context.Context) (*Subscription, error) {
	ps := t.c.Subscribe(ctx, t.cfg.channel)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("presence: subscribe %s: %w", t.cfg.channel, err)
	}
	return &Subscription{ps: ps, msgs: ps.Channel(), ch: t.cfg.channel}, nil
}

// Next blocks until the next event, ctx is done (cancelled or past its
// deadline: ctx.Err() is returned, wrapped, and the subscription stays
// usable) or the subscription is closed and drained (an error matching
// redis.ErrClosed).
// A message that does not decode gives an error matching keys.ErrCorrupt
// (naming the channel); the subscription stays usable.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	var m *redis.Message
	select {
	case <-ctx.Done():
		return Event{}, fmt.Errorf("presence: events %s: %w", s.ch, ctx.Err())
	case msg, ok := <-s.msgs:
		if !ok {
			return Event{}, fmt.Errorf("presence: events %s: %w", s.ch, redis.ErrClosed)
		}
		m = msg
	}
	ev, err := decodeEvent(s.ch, m.Payload)
	if err != nil {
		return Event{}, fmt.Errorf("presence: events: %w", err)
	}
	return ev, nil
}

func decodeEvent(ch, payload string) (Event, error) {
	var w eventWire
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		return Event{}, keys.Corrupt(ch, err)
	}
	if w.UserID == nil || !w.Status.valid() || !w.Previous.valid() {
		return Event{}, keys.Corrupt(ch, errors.New("missing userId or unknown status"))
	}
	return Event{UserID: *w.UserID, Status: w.Status, Previous: w.Previous, At: fromMs(w.At)}, nil
}

// Close unsubscribes, releases the connection and stops the receiving
// goroutine; Next then returns the events already buffered, if any, and
// after them an error matching redis.ErrClosed.
func (s *Subscription) Close() error { return s.ps.Close() }
