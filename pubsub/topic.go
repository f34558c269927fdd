package pubsub

import "github.com/redschema/redschema/keys"

// Topic is one channel, pubsub:{domain}:{event_type}, carrying payloads of
// type T. Build it with NewTopic or MustTopic; the zero Topic is invalid.
type Topic[T any] struct {
	domain, event string
}

// NewTopic returns the topic pubsub:{domain}:{eventType}. Both must be
// non-empty valid UTF-8 of at most 1,024 bytes (else
// ErrInvalid, also matching keys.ErrInvalid); they are escaped like key
// segments, so "a:b" cannot reach another topic's channel nor inject a
// glob pattern.
func NewTopic[T any](domain, eventType string) (Topic[T], error) {
	if _, err := pkg.Key("topic", channelTemplate, keys.Namespace{}, domain, eventType); err != nil {
		return Topic[T]{}, err
	}
	return Topic[T]{domain: domain, event: eventType}, nil
}

// MustTopic is NewTopic that panics on bad input, for topics declared
// with literal names.
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

// Channel returns the Redis channel name under ns, built from the
// registered pattern pubsub:{domain}:{event_type}: ns.Prefix, then
// "pubsub:", then the domain and the event type each escaped like a key
// segment. It returns "" for the zero Topic or an invalid namespace.
func (t Topic[T]) Channel(ns keys.Namespace) string {
	c, err := channelTemplate.Key(ns, t.domain, t.event)
	if err != nil {
		return ""
	}
	return c
}

func (t Topic[T]) valid() bool { return t.domain != "" }
