// Package sub is the library's one typed subscription mechanism, shared by
// pubsub and by every package that publishes events (presence, chat, ...):
// subscribe to channels declared in the keys registry, decode each message
// with the package's decoder (and so its codec), report a message that
// does not decode and go on, survive reconnects, and end with a context or
// Close.
//
// Redis pub/sub is at most once: go-redis re-establishes a broken
// connection and resubscribes, but messages published meanwhile are lost,
// and a subscriber that stays behind its buffer for longer than go-redis's
// send timeout (one minute) loses messages too.
package sub

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// DefaultBuffer is the number of messages a Subscription holds for its
// reader unless Open is told otherwise.
const DefaultBuffer = 100

// Msg is one received message.
type Msg[T any] struct {
	Channel string // the channel it came on
	Value   T      // the decoded value, when Err is nil
	Raw     string // the payload as received
	// Err is set when the payload does not decode: it matches
	// keys.ErrCorrupt and names the channel. The subscription goes on.
	Err error
}

// Subscription receives and decodes the messages of some channels. It is
// safe for one reader at a time (Next, or the channel of Pump).
type Subscription[T any] struct {
	ps     *redis.PubSub
	msgs   <-chan *redis.Message
	decode func(payload string) (T, error)
}

// Open subscribes c to channels and waits until Redis has confirmed each,
// so a message published after Open returns is received; ctx bounds only
// that wait. decode turns a payload into a T. buf is the number of
// messages held for a slow reader (0 means DefaultBuffer). Close the
// subscription when done: it holds a connection and a goroutine.
func Open[T any](ctx context.Context, c redis.UniversalClient, channels []string, decode func(payload string) (T, error), buf int) (*Subscription[T], error) {
	if len(channels) == 0 {
		return nil, errors.New("sub: no channels")
	}
	if buf <= 0 {
		buf = DefaultBuffer
	}
	ps := c.Subscribe(ctx, channels...)
	for range channels {
		if _, err := ps.Receive(ctx); err != nil {
			_ = ps.Close()
			return nil, fmt.Errorf("subscribe %v: %w", channels, err)
		}
	}
	return &Subscription[T]{ps: ps, msgs: ps.Channel(redis.WithChannelSize(buf)), decode: decode}, nil
}

// Next blocks until the next message, ctx is done (its error is returned;
// the subscription stays usable), or the subscription is closed and
// drained (an error matching redis.ErrClosed). A message that does not
// decode is returned with its Err set, not as Next's error.
func (s *Subscription[T]) Next(ctx context.Context) (Msg[T], error) {
	select {
	case <-ctx.Done():
		return Msg[T]{}, ctx.Err()
	case m, ok := <-s.msgs:
		if !ok {
			return Msg[T]{}, redis.ErrClosed
		}
		return s.msg(m), nil
	}
}

func (s *Subscription[T]) msg(m *redis.Message) Msg[T] {
	v, err := s.decode(m.Payload)
	if err != nil {
		return Msg[T]{Channel: m.Channel, Raw: m.Payload, Err: keys.Corrupt(m.Channel, err)}
	}
	return Msg[T]{Channel: m.Channel, Value: v, Raw: m.Payload}
}

// Values delivers the decoded values on a channel of capacity buf (0
// means DefaultBuffer) until ctx is done, then closes the subscription
// and the channel. A message that does not decode is passed to malformed
// (if not nil) and skipped.
func (s *Subscription[T]) Values(ctx context.Context, buf int, malformed func(Msg[T])) <-chan T {
	if buf <= 0 {
		buf = DefaultBuffer
	}
	out := make(chan T, buf)
	go func() {
		defer close(out)
		defer func() { _ = s.Close() }()
		for {
			m, err := s.Next(ctx)
			if err != nil {
				return
			}
			if m.Err != nil {
				if malformed != nil {
					malformed(m)
				}
				continue
			}
			select {
			case out <- m.Value:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Close unsubscribes and releases the connection; Next then returns the
// messages already buffered, and after them redis.ErrClosed.
func (s *Subscription[T]) Close() error { return s.ps.Close() }

// Publish publishes msg on channel. On a Redis Cluster, go-redis sends a
// PUBLISH to any node (it has no key); Publish routes it by the channel's
// slot instead, so that every message of a channel leaves from one node
// and a subscriber receives one publisher's messages in the order they
// were published (messages from several nodes cross the cluster bus on
// separate links and can overtake each other).
func Publish(ctx context.Context, c redis.UniversalClient, channel string, msg any) *redis.IntCmd {
	cmd := redis.NewIntCmd(ctx, "publish", channel, msg)
	cmd.SetFirstKeyPos(1)
	_ = c.Process(ctx, cmd)
	return cmd
}
