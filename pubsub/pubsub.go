package pubsub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// Sentinel errors; match with errors.Is.
var (
	// ErrInvalid: bad input (empty or invalid channel segment, no topics,
	// a payload that does not encode, a bad option). Nothing is published.
	ErrInvalid = errors.New("pubsub: invalid argument")
	// ErrMalformed marks a received message that is not a valid envelope
	// or whose payload does not decode into the topic's type. It arrives
	// as Event.Err; the subscription goes on.
	ErrMalformed = errors.New("pubsub: malformed message")
)

// Bus publishes and subscribes on seed 001's channels. It is safe for
// concurrent use.
type Bus struct {
	client  redis.UniversalClient
	ns      keys.Namespace
	source  string
	bufSize int
}

// Option configures a Bus.
type Option func(*Bus) error

// WithNamespace prefixes every channel with ns.Prefix, like keys.
func WithNamespace(ns keys.Namespace) Option {
	return func(b *Bus) error { b.ns = ns; return nil }
}

// WithSource sets the envelope's "source" (seed: "service_name") for
// everything this Bus publishes. Empty by default.
func WithSource(name string) Option {
	return func(b *Bus) error { b.source = name; return nil }
}

// WithBuffer sets the capacity of the channels Subscribe returns (default
// 100). A subscriber that stays behind longer than go-redis's send timeout
// (one minute) loses messages: Redis pub/sub is at-most-once.
func WithBuffer(n int) Option {
	return func(b *Bus) error {
		if n < 1 {
			return fmt.Errorf("%w: buffer %d", ErrInvalid, n)
		}
		b.bufSize = n
		return nil
	}
}

// New returns a Bus over client. It does no I/O.
func New(client redis.UniversalClient, opts ...Option) (*Bus, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalid)
	}
	b := &Bus{client: client, bufSize: 100}
	for _, o := range opts {
		if err := o(b); err != nil {
			return nil, err
		}
	}
	if err := b.ns.Validate(); err != nil {
		return nil, fmt.Errorf("pubsub: %w", err)
	}
	return b, nil
}

// Topic is one channel, pubsub:{domain}:{event_type}, carrying payloads of
// type T. Build it with NewTopic or MustTopic.
type Topic[T any] struct {
	domain, event string
}

func checkSegment(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty %s", ErrInvalid, what)
	case len(s) > keys.MaxSegmentLen:
		return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, what, keys.MaxSegmentLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, what)
	}
	return nil
}

// NewTopic returns the topic pubsub:{domain}:{eventType}. Both must be
// non-empty valid UTF-8 of at most keys.MaxSegmentLen bytes (ErrInvalid);
// they are escaped like key segments, so "a:b" cannot reach another
// topic's channel.
func NewTopic[T any](domain, eventType string) (Topic[T], error) {
	if err := checkSegment("domain", domain); err != nil {
		return Topic[T]{}, err
	}
	if err := checkSegment("event type", eventType); err != nil {
		return Topic[T]{}, err
	}
	return Topic[T]{domain: domain, event: eventType}, nil
}

// MustTopic is NewTopic that panics on bad input, for package-level topic
// declarations with literal names.
func MustTopic[T any](domain, eventType string) Topic[T] {
	t, err := NewTopic[T](domain, eventType)
	if err != nil {
		panic(err)
	}
	return t
}

// Domain returns the topic's domain ("files").
func (t Topic[T]) Domain() string { return t.domain }

// EventType returns the topic's event type ("uploaded"); it is also the
// envelope's "event".
func (t Topic[T]) EventType() string { return t.event }

// Channel returns the Redis channel name under ns:
// ns.Prefix + "pubsub:" + Escape(domain) + ":" + Escape(eventType).
func (t Topic[T]) Channel(ns keys.Namespace) string {
	return ns.Prefix + "pubsub:" + keys.Escape(t.domain) + ":" + keys.Escape(t.event)
}

// envelope is seed 001's message format.
type envelope struct {
	Event     string          `json:"event"`
	Timestamp time.Time       `json:"timestamp"`
	Payload   json.RawMessage `json:"payload"`
	Source    string          `json:"source"`
}

// Event is one received message.
type Event[T any] struct {
	Event     string    // the envelope's "event"
	Timestamp time.Time // the envelope's "timestamp" (publisher's clock)
	Payload   T
	Source    string // the envelope's "source"
	Channel   string // the Redis channel it came on
	// Err is non-nil (wrapping ErrMalformed) when the message could not be
	// decoded; Raw then holds it and the other fields are zero.
	Err error
	Raw string
}

// Publish sends payload on t's channel in the seed's envelope
// {event, timestamp, payload, source}, timestamped with the local clock in
// UTC. One round trip (PUBLISH). It returns the number of subscribers
// that received it; delivery is at-most-once (a subscriber that is
// disconnected at that moment misses it). A payload that does not encode
// is ErrInvalid.
func Publish[T any](ctx context.Context, b *Bus, t Topic[T], payload T) (int64, error) {
	if t.domain == "" {
		return 0, fmt.Errorf("%w: zero Topic", ErrInvalid)
	}
	p, err := json.Marshal(payload)
	if err != nil {
		return 0, fmt.Errorf("%w: payload does not encode: %w", ErrInvalid, err)
	}
	msg, err := json.Marshal(envelope{Event: t.event, Timestamp: time.Now().UTC(), Payload: p, Source: b.source})
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	ch := t.Channel(b.ns)
	n, err := b.client.Publish(ctx, ch, msg).Result()
	if err != nil {
		return 0, fmt.Errorf("pubsub: publish %q: %w", ch, err)
	}
	return n, nil
}

// Subscribe subscribes to topics and returns a channel of their decoded
// events. It returns once Redis has confirmed every subscription, so a
// message published after it returns is received. The channel is closed
// when ctx is done (the subscription is then closed too).
//
// A message that does not decode arrives as an Event whose Err wraps
// ErrMalformed; it never stops the subscription. A broken connection is
// re-established and the channels resubscribed by go-redis; messages
// published while disconnected are lost (Redis pub/sub keeps nothing).
func Subscribe[T any](ctx context.Context, b *Bus, topics ...Topic[T]) (<-chan Event[T], error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("%w: no topics", ErrInvalid)
	}
	var chans []string
	seen := map[string]bool{}
	for _, t := range topics {
		if t.domain == "" {
			return nil, fmt.Errorf("%w: zero Topic", ErrInvalid)
		}
		if c := t.Channel(b.ns); !seen[c] {
			seen[c] = true
			chans = append(chans, c)
		}
	}
	ps := b.client.Subscribe(ctx, chans...)
	for range chans {
		if _, err := ps.Receive(ctx); err != nil {
			_ = ps.Close()
			return nil, fmt.Errorf("pubsub: subscribe %s: %w", strings.Join(chans, ","), err)
		}
	}
	in := ps.Channel(redis.WithChannelSize(b.bufSize))
	out := make(chan Event[T], b.bufSize)
	go func() {
		defer close(out)
		defer func() { _ = ps.Close() }()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- decode[T](m):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func decode[T any](m *redis.Message) Event[T] {
	ev := Event[T]{Channel: m.Channel}
	var env envelope
	err := json.Unmarshal([]byte(m.Payload), &env)
	if err == nil && len(env.Payload) == 0 {
		err = errors.New("no payload")
	}
	if err == nil {
		err = json.Unmarshal(env.Payload, &ev.Payload)
	}
	if err != nil {
		return Event[T]{Channel: m.Channel, Raw: m.Payload, Err: fmt.Errorf("%w on %q: %w", ErrMalformed, m.Channel, err)}
	}
	ev.Event, ev.Timestamp, ev.Source = env.Event, env.Timestamp, env.Source
	return ev
}
