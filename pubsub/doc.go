// Package pubsub is typed publish/subscribe on seed 001's channels (§6,
// "Database 3: Pub/Sub Channels"): channel pubsub:{domain}:{event_type},
// message envelope
//
//	{"event": "uploaded", "timestamp": "2026-01-16T10:00:00Z", "payload": {...}, "source": "files-api"}
//
// A Topic[T] names one channel and the Go type of its payload; Publish
// encodes, Subscribe returns a Go channel of decoded Event[T]:
//
//	var uploaded = pubsub.MustTopic[FileUploaded]("files", "uploaded")
//	events, err := pubsub.Subscribe(ctx, bus, uploaded)
//	for ev := range events { ... }      // closed when ctx is done
//	n, err := pubsub.Publish(ctx, bus, uploaded, FileUploaded{FileID: "f1"})
//
// # Channels
//
// Channels are not keys: they hold nothing, have no TTL and are not in the
// key registry, so this package registers no key patterns. A channel name
// is built like a key: the Bus namespace prefix, then "pubsub:", then the
// domain and the event type each escaped with keys.Escape (':' '%' '{' '}'
// glob characters and control bytes are %XX-encoded), so user-supplied
// segments can neither reach another topic's channel nor inject glob
// patterns into a PSUBSCRIBE. Seed 001's channels keep their exact names:
//
// | Channel | Topic |
// |---|---|
// | `pubsub:files:uploaded` | MustTopic[T]("files", "uploaded") |
// | `pubsub:files:processed` | MustTopic[T]("files", "processed") |
// | `pubsub:ai:response` | MustTopic[T]("ai", "response") |
// | `pubsub:workflow:started` | MustTopic[T]("workflow", "started") |
// | `pubsub:workflow:completed` | MustTopic[T]("workflow", "completed") |
// | `pubsub:system:notification` | MustTopic[T]("system", "notification") |
// | `pubsub:audit:event` | MustTopic[T]("audit", "event") |
//
// On a Redis Cluster, PUBLISH reaches subscribers on every node; go-redis
// holds one subscription connection, to the node owning the slot of the
// first channel subscribed.
//
// # Semantics
//
//   - Delivery is Redis pub/sub's: at-most-once, to the subscribers
//     connected at the time. For work that must not be lost, use package
//     queue.
//   - A message that is not a valid envelope, or whose payload does not
//     decode into T, arrives as an Event with Err wrapping ErrMalformed
//     and the raw text; the subscription goes on.
//   - A broken connection is re-established and every channel
//     resubscribed by go-redis (it pings idle connections to notice);
//     messages published meanwhile are missed.
//   - Publish is one round trip (PUBLISH). Subscribe returns after Redis
//     confirmed the subscriptions, so nothing published afterwards is
//     missed by a connected subscriber. Cancelling its ctx unsubscribes and
//     closes the channel.
//   - The envelope's timestamp is the publisher's clock, in UTC.
package pubsub
