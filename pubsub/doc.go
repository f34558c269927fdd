// Package pubsub is typed publish/subscribe on Redis: a Topic[T] names one
// channel, pubsub:{domain}:{event_type}, and the Go type of its payload;
// Publish encodes it in a JSON envelope {event, timestamp, payload,
// source, id}, Subscribe returns a Go channel of decoded events. The AI
// platform's named channels have typed topics here (TopicFileUploaded,
// TopicAIResponse, ...).
//
//	bus, err := pubsub.New(rdb, pubsub.WithSource("files-api"))
//	events, err := pubsub.Subscribe(ctx, bus, pubsub.TopicFileUploaded())
//	n, err := pubsub.Publish(ctx, bus, pubsub.TopicFileUploaded(), pubsub.FileUploaded{FileID: "f1"})
//	for ev := range events { ... } // closed when ctx is done
//
// # Guarantees
//
//   - Delivery is Redis pub/sub's: at most once, to the subscribers
//     connected at the time; nothing is stored. For work that must not be
//     lost, use package queue.
//   - A Publish that go-redis resends after a lost reply reaches a
//     subscriber once (Subscribe drops the copy by its message ID).
//   - Publish is one round trip; Subscribe returns once Redis confirmed
//     the subscriptions, and cancelling its ctx closes the channel.
//   - A broken connection is re-established and resubscribed by go-redis;
//     messages published meanwhile are missed.
//   - A malformed or oversize message arrives as an Event whose Err
//     matches ErrMalformed and keys.ErrCorrupt; the subscription goes on.
//   - Bad input is ErrInvalid before anything is sent; user-supplied
//     segments are escaped, so they cannot reach another topic's channel.
//   - Nothing is written to the keyspace.
//   - Deadlines: New refuses a go-redis client without
//     ContextTimeoutEnabled.
//
// # Keys
//
//	Key pattern                   Type     TTL  Purpose
//	pubsub:{domain}:{event_type}  CHANNEL  -    typed events: JSON envelope {event, timestamp, payload, source}
//
// The long form (the envelope, clusters, how the AI platform's channels
// map, limits) is
// https://github.com/redschema/redschema/blob/main/docs/pubsub.md.
package pubsub
