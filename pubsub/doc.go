// Package pubsub is typed publish/subscribe on Redis: a Topic[T] names one
// channel, pubsub:{domain}:{event_type}, and the Go type of its payload;
// Publish encodes it in a JSON envelope, Subscribe returns a Go channel of
// decoded events.
//
//	bus, err := pubsub.New(rdb, pubsub.WithSource("files-api"))
//	events, err := pubsub.Subscribe(ctx, bus, pubsub.TopicFileUploaded())
//	n, err := pubsub.Publish(ctx, bus, pubsub.TopicFileUploaded(), pubsub.FileUploaded{FileID: "f1"})
//	for ev := range events { ... } // closed when ctx is done
//
// # Guarantees
//
//   - Delivery is Redis pub/sub's: at most once, to the subscribers
//     connected at the time, and nothing is stored. A subscriber that is
//     disconnected, or stays behind its buffer for longer than go-redis's
//     send timeout (one minute), misses messages. A Publish whose reply is
//     lost is sent again by go-redis with the same message ID, and
//     Subscribe drops the copy (it remembers the last DedupWindow IDs), so
//     the caller sees one outcome and a subscriber one message. For work
//     that must not be lost, use package queue.
//   - Publish is one round trip (PUBLISH). Subscribe returns after Redis
//     confirmed the subscriptions, so nothing published afterwards is
//     missed by a connected subscriber; cancelling its ctx unsubscribes
//     and closes the channel.
//   - A broken connection is re-established and every channel
//     resubscribed by go-redis; messages published meanwhile are missed.
//   - A message that is not a valid envelope, is larger than the Bus's
//     max message size (WithMaxMessage, 1 MiB by default), or whose
//     payload does not decode into T arrives as an Event whose Err matches
//     ErrMalformed and keys.ErrCorrupt and names the channel; the
//     subscription goes on.
//   - Bad input (a nil client, a bad option, an empty, oversize or
//     invalid UTF-8 topic segment, a payload that does not encode or is
//     above the max message size) is ErrInvalid before anything is sent.
//     A network failure or a timeout is returned as such, naming the
//     channel.
//   - Nothing is written to the keyspace: channels have no TTL and hold
//     nothing.
//   - Deadlines: create the client with ContextTimeoutEnabled: true (New
//     refuses one without), or go-redis ignores context deadlines while a
//     server hangs.
//
// # Keys
//
//	Key pattern                   Type     TTL  Purpose
//	pubsub:{domain}:{event_type}  CHANNEL  -    typed events: JSON envelope {event, timestamp, payload, source}
//
// # Compatibility with existing layouts
//
// Channels and messages follow seed 001 §6 ("Database 3: Pub/Sub
// Channels"): the channel pubsub:{domain}:{event_type} and the envelope
//
//	{"event": "uploaded", "timestamp": "2026-01-16T10:00:00Z", "payload": {...}, "source": "files-api"}
//
// The seed's named channels keep their exact names, and have typed topics
// and payloads here: pubsub:files:uploaded (TopicFileUploaded,
// FileUploaded), pubsub:files:processed (TopicFileProcessed),
// pubsub:ai:response (TopicAIResponse), pubsub:workflow:started
// (TopicWorkflowStarted), pubsub:workflow:completed
// (TopicWorkflowCompleted), pubsub:system:notification
// (TopicSystemNotification) and pubsub:audit:event (TopicAuditEvent).
// Deviations:
//
//   - Segments are escaped like key segments (':' '%' '{' '}', glob
//     characters and control bytes are %XX-encoded), so a user-supplied
//     domain or event type can neither reach another topic's channel nor
//     inject a pattern into a PSUBSCRIBE. The seed's names contain none of
//     these and are unchanged.
//   - The seed gives pub/sub its own database (3). Channels are not scoped
//     by database in Redis (a PUBLISH on any database reaches every
//     subscriber of the channel), so the Bus's namespace prefix is what
//     keeps applications apart.
//   - The envelope's timestamp is the publisher's clock, in UTC, as the
//     seed's example shows; "source" is empty unless WithSource sets it.
//   - The envelope has a fifth field, "id": 24 random hex digits per
//     Publish call, by which a subscriber recognises a PUBLISH that
//     go-redis resent after a lost reply. Readers of the seed's envelope
//     ignore it; messages without it (from the seed's own publishers) are
//     delivered as they are.
//
// # Clusters
//
// On a Redis Cluster, PUBLISH reaches subscribers on every node; go-redis
// holds one subscription connection, to the node owning the slot of the
// first channel subscribed.
package pubsub
