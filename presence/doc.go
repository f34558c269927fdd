// Package presence tracks who is online in Redis: a Tracker keeps
// multi-device connections with heartbeats and stale-connection pruning,
// last seen, statuses (invisible included), change events and a sweeper
// that announces silent offlines; Channels keeps who is in which room,
// one member per user, with exactly-once join and leave events; the
// Tracker also keeps typing indicators and admins' availability.
//
//	tr, err := presence.New(rdb) // rdb created with ContextTimeoutEnabled: true
//	...
//	r, err := tr.Connect(ctx, "42", presence.Conn{ID: "tab-1", Metadata: presence.Metadata{Device: "web"}})
//	// every DetailedProfile().Heartbeat (30 s), while the socket lives:
//	_, err = tr.Heartbeat(ctx, "42", "tab-1") // errors.Is(err, presence.ErrUnknownConnection): Connect again
//	p, err := tr.Get(ctx, "42")               // p.Online(), p.LastSeen, p.Public()
//	_, err = tr.Disconnect(ctx, "42", "tab-1")
//
// # Guarantees
//
//   - One round trip per operation: one script on one slot, one command, or
//     one pipeline (split per node on a cluster, never cross-slot).
//   - Atomicity: every write leaves a user online with a live connection,
//     offline without one, and activeConnections at the live count; a
//     connection that stops heartbeating stays counted until the user's
//     next write or the Sweep (Connections leaves it out at once).
//   - Server time decides staleness, expiry, throttles and event times.
//   - Idempotent under retry: a write that go-redis resends after a lost
//     reply, within the replay window (3 min), returns its first outcome and
//     changes and publishes nothing again.
//   - Events are published once, by the script that made the change; a
//     channel's joins and leaves exactly once, silent leaves included.
//   - Bounded memory: every key has a TTL (see the table); connections,
//     metadata, IDs and usernames have limits; the online index is pruned.
//   - Errors: ErrInvalid before any write; data the package did not write
//     is keys.ErrCorrupt naming the key; an outage is never a sentinel.
//   - Failover: the last writes to a user can be lost; the next heartbeat
//     repairs them (ErrUnknownConnection: Connect again).
//   - Deadlines: the constructors refuse a client without
//     ContextTimeoutEnabled.
//
// # Keys
//
//	Key pattern                                      Type     TTL                                                                                                                                                                                                            Purpose
//	admin:{{admin_id}}:presence                      STRING   30m                                                                                                                                                                                                            admin availability: online, away, busy or offline
//	admin:{{tag}}:{admin_id}:presence                STRING   30m                                                                                                                                                                                                            admin availability under a deployment-wide hash tag (WithAvailabilityTag), for scripts that read it with other {tag} keys
//	connections:{{user_id}}                          HASH     1m (until the freshest connection goes stale (profile TTL after its lastSeen); stale fields pruned in Lua)                                                                                                     a user's live connections: connection ID -> JSON connectedAt, lastSeen, metadata (LayoutHash only)
//	presence:channel:devices:{{channel}}             ZSET     11m (sweep window after the channel's last device expiry; expired devices removed, their silent leaves announced, by every write to the channel and by Sweep)                                                  a channel's devices: "<len(user_id)>:<user_id><conn_id>" scored by expiry (ms)
//	presence:channel:due:{{slot}}                    ZSET     11m (sweep window after its latest due time)                                                                                                                                                                   channels of one cluster slot scored by when Channels.Sweep must visit them (first device expiry or pending occupancy event, ms)
//	presence:channel:occupancy:{{channel}}           STRING   11m (as the channel's members, at least twice the occupancy interval)                                                                                                                                          a channel's last occupancy event: "<at ms>:<count>", for the throttle
//	presence:channel:requests:{{channel}}:{user_id}  ZSET     3m (after the last recorded request; older members pruned)                                                                                                                                                     request memo: a user's Join, Leave and Update requests in a channel of the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends
//	presence:channel:{{channel}}                     HASH     11m (sweep window after the channel's last device expiry)                                                                                                                                                      a channel's members (Channels): user ID -> "<devices>:<data JSON>", one field per user however many devices
//	presence:online:{{slot}}                         ZSET     11m (latest member's presence expiry + offline retention (the TTL when the retention is 0); members past it pruned on every write that may add one (all but the heartbeat of a live connection) and by Sweep)  online index shard for one cluster slot: visible users scored by presence expiry (ms) + status fraction, kept after expiry to remember last seen and for Sweep to announce silent offlines (announced: score negated)
//	presence:requests:{{user_id}}                    ZSET     3m (after the user's last recorded request; older members pruned)                                                                                                                                              request memo: a user's Connect, Disconnect, SetStatus, SetActivity (and offline-taking Heartbeat) requests of the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends
//	presence:sweeps:{{slot}}                         ZSET     3m (after the shard's last sweep that announced someone; older members pruned)                                                                                                                                 request memo: the sweeps of an online index shard that announced someone in the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends
//	presence:{{user_id}}                             STRING   1m (profile TTL after the freshest heartbeat; the retention after going offline (default 60s, 600s))                                                                                                           a user's presence JSON: status, lastSeen, activeConnections, metadata (FormatDetailed) or userId, status, lastSeen (FormatCompact); with LayoutSingleKey also the connections
//	typers:requests:{{conversation_id}}:{user_id}    ZSET     3m (after the last recorded request; older members pruned)                                                                                                                                                     request memo with WithOtherWriters (outside typing:): a user's Typing.Stop (and unthrottled Typing.Start) requests in a conversation of the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends
//	typers:throttle:{{conversation_id}}:{user_id}    STRING   2s (profile typing throttle)                                                                                                                                                                                   typing throttle with WithOtherWriters (outside typing:): set NX to the request ID of each accepted Typing.Start
//	typers:{{conversation_id}}                       ZSET     3s (typing TTL after the latest Typing.Start; expired members pruned on every write)                                                                                                                           index of a conversation's typing JSON values scored by expiry (ms), replaces the chat app's KEYS scan
//	typing:requests:{{conversation_id}}:{user_id}    ZSET     3m (after the last recorded request; older members pruned)                                                                                                                                                     request memo: a user's Typing.Stop (and unthrottled Typing.Start) requests in a conversation of the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends
//	typing:throttle:{{conversation_id}}:{user_id}    STRING   2s (profile typing throttle)                                                                                                                                                                                   typing throttle: set NX to the request ID of each accepted Typing.Start
//	typing:{{conversation_id}}:{user_id}             STRING   3s (profile typing TTL)                                                                                                                                                                                        typing indicator JSON: userId, username, timestamp
//	presence:channel:events:{{channel}}              CHANNEL  -                                                                                                                                                                                                              a channel's presence events: JSON type join, leave, update or occupancy, userId, data, reason, count, at
//	presence:events                                  CHANNEL  -                                                                                                                                                                                                              presence changes as others see them: JSON userId, status, previous, at
//
// The {{x}} marks the hash tag: presence:{{user_id}} is written
// presence:{42}. With keys.Namespace.NoHashTags the keys are
// byte-identical to the presence service's, the chat app's and the
// home-automation backend's (standalone server only; see
// docs/presence-service.md, docs/chat-app.md, docs/home-automation.md).
//
// The long form (every guarantee in full, layouts and their costs, the
// online index and sweeper, channel presence, failover figures, how each
// reference layout maps) is
// https://github.com/redschema/redschema/blob/main/docs/presence.md.
package presence
