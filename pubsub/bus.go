package pubsub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/sub"
)

// Bus publishes and subscribes on typed topics in one namespace. It is
// safe for concurrent use.
type Bus struct {
	rdb    redis.UniversalClient
	o      options
	isJSON bool
}

// envelope is the message format: {event, timestamp, payload, source},
// and the message ID this package adds.
type envelope struct {
	Event     string          `json:"event"`
	Timestamp time.Time       `json:"timestamp"`
	Payload   json.RawMessage `json:"payload"`
	Source    string          `json:"source"`
	ID        string          `json:"id,omitempty"`
}

// newMessageID returns a random message ID: 96 bits, 24 hex digits.
func newMessageID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DedupWindow is how many message IDs a subscription remembers: a message
// whose ID it has seen among the last DedupWindow IDs is dropped.
const DedupWindow = 1024

// dedup remembers the last DedupWindow message IDs of one subscription.
type dedup struct {
	seen map[string]struct{}
	ring [DedupWindow]string
	next int
}

// maxMessageID bounds the IDs a subscription remembers (ours are 24
// bytes), so that another publisher's huge IDs cannot hold memory.
const maxMessageID = 64

// fresh reports whether id was not seen among the last DedupWindow IDs,
// and remembers it. An empty ID (a publisher that does not set one) or
// one longer than maxMessageID is always fresh.
func (d *dedup) fresh(id string) bool {
	if id == "" || len(id) > maxMessageID {
		return true
	}
	if _, ok := d.seen[id]; ok {
		return false
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.seen, old)
	}
	d.ring[d.next] = id
	d.next = (d.next + 1) % DedupWindow
	d.seen[id] = struct{}{}
	return true
}

// Event is one received message.
type Event[T any] struct {
	Event     string    // the envelope's "event"
	Timestamp time.Time // the envelope's "timestamp" (publisher's clock)
	Payload   T
	Source    string // the envelope's "source"
	Channel   string // the Redis channel it came on
	// ID is the envelope's "id": random per Publish call, the same when
	// go-redis resends the PUBLISH; empty for a publisher that sets none.
	ID string
	// Err is non-nil when the message could not be decoded: it matches
	// ErrMalformed and keys.ErrCorrupt and names the channel; Raw then
	// holds the message (cut to the Bus's max message size) and the other
	// fields are zero.
	Err error
	Raw string
}

// maxTopics bounds the topics of one Subscribe call.
const maxTopics = 1000

// Publish sends payload on t's channel in the envelope
// {event, timestamp, payload, source, id}, timestamped with the local
// clock in UTC, with a random message ID. One round trip (PUBLISH). It
// returns the number of subscribers that received it (on a cluster, those
// connected to the node that served the PUBLISH). Delivery is
// at-most-once: a subscriber that is disconnected at that moment misses
// it. A PUBLISH whose reply is lost is sent again by go-redis with the
// same message ID, and Subscribe drops the second copy (see
// DedupWindow), so a subscriber sees the message once. A zero Topic, a
// payload that does not encode, or a message above the Bus's max message
// size is ErrInvalid, and nothing is sent.
func Publish[T any](ctx context.Context, b *Bus, t Topic[T], payload T) (int64, error) {
	const op = "publish"
	if !t.valid() {
		return 0, pkg.Invalidf(op, "zero Topic")
	}
	ch := t.Channel(b.o.ns)
	p, err := b.o.codec.Marshal(payload)
	if err != nil {
		return 0, pkg.Invalid(op, fmt.Errorf("payload does not encode: %w", err))
	}
	if !b.isJSON && !json.Valid(p) {
		if p, err = json.Marshal(p); err != nil { // []byte: a base64 string
			return 0, pkg.Invalid(op, err)
		}
	}
	msg, err := json.Marshal(envelope{Event: t.event, Timestamp: time.Now().UTC(), Payload: p, Source: b.o.source, ID: newMessageID()})
	if err != nil {
		return 0, pkg.Invalid(op, fmt.Errorf("payload does not encode: %w", err))
	}
	if len(msg) > b.o.maxMessage {
		return 0, pkg.Invalidf(op, "message of %d bytes, limit %d", len(msg), b.o.maxMessage)
	}
	n, err := sub.Publish(ctx, b.rdb, ch, msg).Result()
	if err != nil {
		return 0, pkg.Fail(op, ch, nil, err)
	}
	return n, nil
}

// Subscribe subscribes to up to 1000 topics and returns a channel of
// their decoded events. It returns once Redis has confirmed every
// subscription, so a message published after it returns is received. The
// channel is closed when ctx is done (the subscription is then closed
// too).
//
// A message that does not decode (not an envelope, larger than the Bus's
// max message size, or a payload that is not a T) arrives as an Event
// whose Err matches ErrMalformed; it never stops the subscription. A
// message whose ID was among the last DedupWindow IDs the subscription
// received (a PUBLISH go-redis resent after a lost reply) is dropped. A
// broken connection is re-established and the channels resubscribed by
// go-redis; messages published while disconnected are lost (Redis pub/sub
// keeps nothing).
func Subscribe[T any](ctx context.Context, b *Bus, topics ...Topic[T]) (<-chan Event[T], error) {
	const op = "subscribe"
	if len(topics) == 0 || len(topics) > maxTopics {
		return nil, pkg.Invalidf(op, "%d topics, want 1 to %d", len(topics), maxTopics)
	}
	var chans []string
	seen := map[string]bool{}
	for _, t := range topics {
		if !t.valid() {
			return nil, pkg.Invalidf(op, "zero Topic")
		}
		if c := t.Channel(b.o.ns); !seen[c] {
			seen[c] = true
			chans = append(chans, c)
		}
	}
	s, err := sub.Open(ctx, b.rdb, chans, func(payload string) (message[T], error) { return decode[T](b, payload) }, b.o.buf)
	if err != nil {
		return nil, pkg.Fail(op, chans[0], nil, err)
	}
	out := make(chan Event[T], b.o.buf)
	go func() {
		defer close(out)
		defer func() { _ = s.Close() }()
		d := dedup{seen: make(map[string]struct{}, DedupWindow)}
		for {
			m, err := s.Next(ctx)
			if err != nil {
				return
			}
			if m.Err == nil && !d.fresh(m.Value.env.ID) {
				continue // a resent PUBLISH
			}
			select {
			case out <- event(b, m):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// message is a decoded envelope.
type message[T any] struct {
	env     envelope
	payload T
}

// decode decodes one received message of b.
func decode[T any](b *Bus, raw string) (message[T], error) {
	var m message[T]
	if len(raw) > b.o.maxMessage {
		return m, fmt.Errorf("%w: %d bytes, limit %d", ErrMalformed, len(raw), b.o.maxMessage)
	}
	if err := json.Unmarshal([]byte(raw), &m.env); err != nil {
		return m, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(m.env.Payload) == 0 || string(m.env.Payload) == "null" {
		return m, fmt.Errorf("%w: no payload", ErrMalformed)
	}
	data := []byte(m.env.Payload)
	if !b.isJSON && data[0] == '"' {
		var bs []byte
		if json.Unmarshal(data, &bs) == nil {
			data = bs
		}
	}
	if err := b.o.codec.Unmarshal(data, &m.payload); err != nil {
		return m, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	return m, nil
}

// event turns a received message into an Event.
func event[T any](b *Bus, m sub.Msg[message[T]]) Event[T] {
	if m.Err != nil {
		raw := m.Raw
		if len(raw) > b.o.maxMessage {
			raw = raw[:b.o.maxMessage]
		}
		err := m.Err
		if !errors.Is(err, ErrMalformed) {
			err = fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return Event[T]{Channel: m.Channel, Raw: raw, Err: err}
	}
	v := m.Value
	return Event[T]{Event: v.env.Event, Timestamp: v.env.Timestamp, Payload: v.payload, Source: v.env.Source, Channel: m.Channel, ID: v.env.ID}
}
