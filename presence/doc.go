// Package presence tracks who is online in Redis: multi-device connections
// with heartbeats and stale-connection pruning, last seen, statuses
// (invisible included), change events, channel presence (Channels: who is
// in which room, deduplicated per user, with exactly-once join and leave
// events), typing indicators (Typing) and admin availability
// (Availability).
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
//   - One round trip per operation: Connect, Heartbeat, Disconnect,
//     SetStatus, SetActivity, Connections, Typing.Start, Typing.Stop,
//     Typing.Typers, Availability.Get and Channels' Join, Leave, Heartbeat
//     and Update are each one Lua script whose keys share one hash tag
//     (one cluster slot); Channels' Count and Members are one command; Availability.Set is one SET;
//     Get, GetMany, Online, OnlineNow and OnlineCount are one pipeline
//     (split per node on a cluster, never a cross-slot command); Sweep is
//     one pipeline of one script per shard it visits. Calls made while
//     others are in flight share pipelines (WithPipelining).
//   - Atomicity: each script reads and writes a user's presence,
//     connections and online-index shard together, so no reader ever sees
//     a user online with no live connection, offline with one, or an
//     activeConnections that is not the live count.
//   - Server time: staleness, expiry, throttles and event times come from
//     the server's TIME inside the scripts, so app clocks never disagree.
//   - Idempotence under retry: go-redis resends a command whose reply was
//     lost after the server ran it, and a whole pipeline after a cut
//     connection. Every write draws a request ID before its first send;
//     Connect, Disconnect, SetStatus, SetActivity, Typing.Stop, Sweep (and
//     Typing.Start, through its throttle marker) record their first
//     outcome under it, and a replay within ReplayWindow (1 min) returns
//     that outcome and changes nothing: a replayed Connect does not report
//     Changed twice, a replayed Typing.Start does not report itself
//     throttled, a replayed Sweep reports the users it announced. Heartbeat
//     and Availability.Set are idempotent as they are (running them twice
//     is running them once); a Heartbeat whose prune took the user offline
//     records that outcome too. Events are published once, by the run
//     that made the change; a replay publishes nothing.
//   - Bounded memory: every key has a TTL (see the table); connections
//     per user, metadata, IDs and usernames have limits; the online index
//     is pruned by every write that may add a member to a shard (all but
//     the heartbeat of a live connection, which only moves its member's
//     score) and by Sweep; replay records keep at most 8
//     outcomes per user (or shard, or user and conversation) for
//     ReplayWindow.
//   - Errors: ErrInvalid for bad input, before anything is written (a bad
//     ID also matches keys.ErrInvalidKey); ErrUnknownConnection,
//     ErrOffline, ErrTooManyConnections and ErrNoIndex as documented per
//     method; keys.ErrCorrupt, naming the exact key, for data this package
//     did not write (bad JSON, an unknown status, a lastSeen or score that
//     is negative, not an integer or more than MaxClockSkew ahead of server
//     time, a key of the wrong type, a throttle marker or availability
//     without a bounded TTL). A network failure, a timeout or a cluster
//     error is returned as such, never as a sentinel. Every error names the
//     operation and the key; redis.Nil never escapes.
//   - Deadlines: New, NewTyping and NewAvailability refuse a go-redis
//     client without ContextTimeoutEnabled, which would ignore context
//     deadlines while a server hangs.
//
// # Keys
//
//	Key pattern                                    Type     TTL                                                                                                                                                                                                            Purpose
//	admin:{{admin_id}}:presence                    STRING   30m                                                                                                                                                                                                            admin availability: online, away, busy or offline
//	admin:{{tag}}:{admin_id}:presence              STRING   30m                                                                                                                                                                                                            admin availability under a deployment-wide hash tag (WithAvailabilityTag), for scripts that read it with other {tag} keys
//	connections:{{user_id}}                        HASH     1m (until the freshest connection goes stale (profile TTL after its lastSeen); stale fields pruned in Lua)                                                                                                     a user's live connections: connection ID -> JSON connectedAt, lastSeen, metadata (LayoutHash only)
//	presence:channel:devices:{{channel}}           ZSET     11m (sweep window after the channel's last device expiry; expired devices removed, their silent leaves announced, by every write to the channel and by Sweep)                                                  a channel's devices: "<len(user_id)>:<user_id><conn_id>" scored by expiry (ms)
//	presence:channel:due:{{slot}}                  ZSET     11m (sweep window after its latest due time)                                                                                                                                                                   channels of one cluster slot scored by when Channels.Sweep must visit them (first device expiry or pending occupancy event, ms)
//	presence:channel:occupancy:{{channel}}         STRING   11m (as the channel's members, at least twice the occupancy interval)                                                                                                                                          a channel's last occupancy event: "<at ms>:<count>", for the throttle
//	presence:channel:replay:{{channel}}:{user_id}  STRING   1m (after the last recorded request)                                                                                                                                                                           first outcomes of a user's last 8 Join, Leave and Update requests in a channel, for replays
//	presence:channel:{{channel}}                   HASH     11m (sweep window after the channel's last device expiry)                                                                                                                                                      a channel's members (Channels): user ID -> "<devices>:<data JSON>", one field per user however many devices
//	presence:online:{{slot}}                       ZSET     11m (latest member's presence expiry + offline retention (the TTL when the retention is 0); members past it pruned on every write that may add one (all but the heartbeat of a live connection) and by Sweep)  online index shard for one cluster slot: visible users scored by presence expiry (ms) + status fraction, kept after expiry to remember last seen and for Sweep to announce silent offlines (announced: score negated)
//	presence:replay:{{user_id}}                    STRING   1m (after the user's last recorded request)                                                                                                                                                                    first outcomes of a user's last 8 Connect, Disconnect, SetStatus, SetActivity (and offline-taking Heartbeat) requests, for replays
//	presence:sweep:{{slot}}                        STRING   1m (after the shard's last sweep that announced someone)                                                                                                                                                       first outcomes of the last 8 sweeps of an online index shard that announced someone, for replays
//	presence:{{user_id}}                           STRING   1m (profile TTL after the freshest heartbeat; the retention after going offline (default 60s, 600s))                                                                                                           a user's presence JSON: status, lastSeen, activeConnections, metadata (FormatDetailed) or userId, status, lastSeen (FormatCompact); with LayoutSingleKey also the connections
//	typers:{{conversation_id}}                     ZSET     3s (typing TTL after the latest Typing.Start; expired members pruned on every write)                                                                                                                           index of a conversation's typing JSON values scored by expiry (ms), replaces the seed's KEYS
//	typing:replay:{{conversation_id}}:{user_id}    STRING   1m (after the last recorded request)                                                                                                                                                                           first outcomes of a user's last 8 Typing.Stop (and unthrottled Typing.Start) requests in a conversation, for replays
//	typing:throttle:{{conversation_id}}:{user_id}  STRING   2s (profile typing throttle)                                                                                                                                                                                   typing throttle: set NX to the request ID of each accepted Typing.Start
//	typing:{{conversation_id}}:{user_id}           STRING   3s (profile typing TTL)                                                                                                                                                                                        typing indicator JSON: userId, username, timestamp
//	presence:channel:events:{{channel}}            CHANNEL  -                                                                                                                                                                                                              a channel's presence events: JSON type join, leave, update or occupancy, userId, data, reason, count, at
//	presence:events                                CHANNEL  -                                                                                                                                                                                                              presence changes as others see them: JSON userId, status, previous, at
//
// The {{x}} marks the hash tag: presence:{{user_id}} is written
// presence:{42}. With keys.Namespace.NoHashTags the keys are byte-identical
// to the seed layouts' (on a standalone server only).
//
// # Compatibility with existing layouts
//
// Keys and values follow seed 002 (presence service: presence:{user_id},
// connections:{user_id}), seed 004 §1-2 (chat presence presence:{user_id}
// and typing:{conversation_id}:{user_id}) and seed 000 §5 (admin presence
// admin:{admin_id}:presence), so applications written against those
// documents can read what this package writes, with these changes:
//
//   - Formats and profiles: DetailedProfile is seed 002's (60 s TTL,
//     heartbeat 30 s, 600 s offline retention, FormatDetailed: the seed's
//     field names and key order, empty fields omitted); CompactProfile is
//     seed 004's (300 s TTL, deleted offline, FormatCompact: the seed's
//     {"userId","status","lastSeen"}; the 100 s heartbeat is ours, the seed
//     names none). With LayoutHash every key and value of seed 002 is
//     byte-compatible; LayoutSingleKey moves the connections into the
//     presence value (see "Layouts").
//   - Hash tags: the user (conversation, admin) ID is the tag, so an
//     entity's keys share a slot; keys.Namespace.NoHashTags gives the seeds'
//     exact bytes on a standalone server.
//   - Stale connections: seed 002 relies on the hash TTL, which a user's
//     other devices keep refreshing, so a dead tab stays "connected"
//     forever. Every script prunes connections whose lastSeen (server time)
//     is a TTL old before it counts them; activeConnections is always the
//     live count.
//   - Atomicity: seed 002 runs HSET/EXPIRE/SETEX and HDEL/HLEN as separate
//     commands, so concurrent connect and disconnect can leave a user online
//     with no connection or offline with one. Here each operation is one
//     script over the user's keys.
//   - Seed 004 deletes the presence key on any disconnect, so closing one of
//     two tabs shows the user offline. CompactProfile writes the seed's
//     JSON but counts devices in the connections hash, and deletes the key
//     only when the last one goes.
//   - Offline retention: Disconnect of the last connection writes status
//     "offline" with a PX of the profile's Retention (seed 002: 600 s; seed
//     004 deletes the key: Retention 0). A user whose devices all die
//     silently has the key expire at the online TTL as in the seeds; Get
//     still reports their last seen for the retention, from the online
//     index.
//   - Duplicated metadata: seed 002 copies the userAgent into the presence
//     key; here it lives only in the connection that has it, and the
//     presence metadata keeps the device (of the freshest connection) and
//     lastActivity, only when set.
//   - Heartbeat of an unknown connection returns ErrUnknownConnection and
//     writes nothing for it (it has no metadata to register it again).
//   - Lists: seed 002 checks a list of users with MGET (cross-slot on a
//     cluster); GetMany and Online pipeline GETs. Everyone online is listed
//     from an index (presence:online:{slot}, below) instead of KEYS or
//     SCAN.
//   - Typing: seed 004 throttles in process memory (broken with several app
//     instances) and lists typers with KEYS. Here the throttle is a SET NX
//     PX in the same script as the write, and each conversation has a
//     sorted set of its typing values (typers:{conversation_id}), so
//     Typers is one read-only script.
//   - Admin availability (seed 000) stays the bare word with its 30 min
//     TTL; it takes online, away, busy or offline, not invisible.
//     WithAvailabilityTag moves it to admin:{tag}:{admin_id}:presence for
//     scripts of a deployment that reads it with other {tag} keys on a
//     cluster (a chat assignment).
//   - Keys the seeds do not have: the online index, the typing index and
//     throttle, and the replay records (presence:replay:{user_id},
//     presence:sweep:{slot}, typing:replay:{conversation_id}:{user_id}).
//   - Events: the seeds name none; changes are published on the channel
//     presence:events (see Event).
//
// # Values
//
// With FormatDetailed the presence key holds
// {"status","lastSeen","activeConnections","metadata":{"device","lastActivity"}}
// and each connection {"connectedAt","lastSeen","metadata":{"device",
// "userAgent","ip","socketId"}}, times in Unix milliseconds. With
// FormatCompact the presence key holds {"userId","status","lastSeen"}.
// With LayoutSingleKey either ends with a "connections" member (see
// Layouts). Status is "online", "away", "busy", "invisible" or "offline";
// readers that test status == "online" && activeConnections > 0 see away,
// busy and invisible users as not online.
//
// # Layouts
//
// WithLayout chooses where connections live. LayoutHash (the default)
// keeps them in the hash connections:{user_id}. LayoutSingleKey drops the
// hash and appends the connections to the presence JSON, as its last
// member:
//
//	{"status":"online","lastSeen":1698000000000,"activeConnections":2,
//	 "metadata":{"device":"web","lastActivity":"active"},
//	 "connections":{"conn_123":[1698000000000,1698000000000,
//	   {"device":"web","userAgent":"Mozilla/5.0 ...","ip":"192.168.1.1","socketId":"socket_abc123"}],
//	   "conn_456":[...]}}
//
// A connection is [connectedAt, lastSeen, metadata] (positional: names
// would add 36 bytes per connection); member order inside is left to the
// server's JSON encoder. The presence value is otherwise the profile's
// Format, with the same TTLs, index and events.
//
// What keeps working for readers of the presence key: GET presence:X,
// MGET or pipelined GETs, JSON.parse(v).status / lastSeen /
// activeConnections / metadata, and the key's TTL. What breaks: HGETALL
// connections:X (and HGET, HLEN) find nothing; such readers must read
// JSON.parse(v).connections instead (Connections does). The two layouts
// must not write one namespace at once, and there is no migration: a
// tracker of one layout does not see the other's connections and takes the
// users offline on its next write.
//
// Why: with typical metadata each connection JSON is about 190 bytes, over
// Redis's hash-max-listpack-value (64), so the hash is a real hashtable
// with per-field overhead; one string per user saves that, a key and the
// hash's TTL. Measured (bench/RESULTS.md): 600 bytes per online user with
// two connections against 998 for the hash layout, 40% fewer (the index
// adds about 27 B per user at a million users). The saving moves with the
// metadata's size through the allocator's size classes (a 125-character
// user agent measured 44%).
//
// Costs: every GET of the presence key (Get, GetMany, Online, other
// readers) transfers the connections too, 466 instead of 118 bytes per
// user in the benchmark, so GetMany moves about 4x the bytes; Go decodes
// only the part before "connections" (the scripts write it last), and
// Presence never carries connections. Each write decodes and re-encodes
// the whole value: a heartbeat takes about 20 us of Redis time against
// 17 us with the hash layout. The value is bounded by the connection and
// metadata limits: the presence part plus at most WithMaxConnections
// connections of at most 6 x MaxConnIDLen (an ID escaped at worst) +
// WithMaxMetadata + 40 bytes, about 83 KB with the defaults (32, 1024) in
// the worst case and a few hundred bytes per connection in practice; lower
// WithMaxConnections to tighten it.
//
// # Online index
//
// A list of everyone online uses an index instead of KEYS/SCAN: one sorted
// set per cluster slot (presence:online:{tag} where the tag is chosen to
// hash to that slot), member the user ID, score the presence expiry in ms
// (plus a status fraction, see "Silent offlines"). Because the shard is in
// the user's slot, the same script updates it: it is exact, never lagging
// Get. Members past expiry + retention (the sweep window) are pruned on
// every write that may add a member to the shard (a heartbeat of a live
// connection only moves its own member's score) and by Sweep, and a
// shard expires with its latest member, so it is bounded by the users of
// that slot online within the last TTL + window (readers skip members
// past their expiry). The cost moves to the
// reader: OnlineNow reads all 16384 shards in one pipeline. Invisible
// users are not indexed. The index costs memory (bench/RESULTS.md: about
// 27 B per online user at a million users, more per user when few users
// share a slot); WithoutOnlineIndex turns it off. A member whose score no
// script of this package writes is corrupt for OnlineNow and Get, and is
// dropped by the next write that recomputes the shard's TTL and by Sweep.
//
// # Silent offlines
//
// When all of a user's devices die without Disconnect, the presence key
// simply expires and nothing runs in Redis, so Connect, Disconnect and
// SetStatus cannot publish the offline event. Sweep finds these users in
// the online index and publishes, once per silent expiry, the event
// Disconnect would have: {"userId","status":"offline","previous","at"},
// as others see it ("previous" online, away or busy; "at" the expiry).
//
// Design: an index member's score is the presence expiry in ms plus a
// fraction naming the public status (online .0, away .25, busy .5; Get,
// OnlineNow and the TTL arithmetic ignore it). A positive score below
// server TIME is a silent expiry not yet announced: the key expired at that
// instant by the same server clock (the script that wrote the score set the
// key's PX to it). Sweep runs one script per shard that, atomically, reads
// those members (at most 256 per visit), negates their scores (announced)
// and PUBLISHes each event; concurrent sweeps of one shard serialise on it,
// so each user is announced by exactly one of them. A negated member keeps
// |score| - TTL as the last seen time for Get and is pruned after the
// retention like any offline member. The user scripts respect the marks:
// Connect overwrites the member (a user who reconnected before the sweep is
// not announced; their Connect published offline -> online), Disconnect of
// an online user removes it with its own event, and operations on a user
// who is already offline (a late Disconnect or Heartbeat) leave it for the
// sweep. A user who comes back Invisible before the sweep would otherwise
// stay online in others' eyes: that Connect announces the pending offline
// itself. Invisible users are never indexed, so never announced (going
// invisible already published "offline"); WithoutOnlineIndex leaves nothing
// to sweep (Sweep and RunSweeper return ErrNoIndex).
//
// Window: writes to a shard prune unannounced members once they are
// SweepWindow old (the retention, or the TTL when it is zero: with
// CompactProfile the index keeps a silent expiry for 300 s, and Get
// reports no last seen since the retention is zero). So every shard must
// be swept within the window; RunSweeper refuses a cycle longer than it.
//
// Latency and cost: RunSweeper(ctx, every, batch, onError) sweeps batch
// shards per interval (one pipeline, one round trip) and cycles through all
// 16384 in ceil(16384/batch) x every, which bounds how late a silent
// offline is announced (about one cycle after the expiry; e.g. batch 512
// every second: 32 s). Each cycle runs 16384 scripts per sweeping instance;
// most find no shard (an EXISTS), measured about 0.1 s of Redis CPU per
// cycle on an empty namespace (about 6 us per script, on a loaded shared
// machine), plus a ZADD and a PUBLISH per announced user. Any number of
// instances may sweep one namespace; one or two suffice.
//
// # Channel presence
//
// A Channels[T] (NewChannels, the same options as New) keeps who is in
// which channel (a room, a document): Join(channel, user, device, data),
// Leave, Heartbeat (per channel and device, every profile Heartbeat),
// Update (the member's data, of type T), Members, Count, and events on
// presence:channel:events:{channel} (ChannelEvent: join, leave, update,
// occupancy).
//
// Members are users: a user with several devices in a channel is one
// member, who joins with their first device in and leaves with their last
// device out. Each join and each leave is published exactly once, by the
// script that made it, silent leaves included: a device that stops
// heartbeating leaves a profile TTL after its last Join or Heartbeat, and
// the next write to the channel or Sweep (RunSweeper) removes it and, if
// it was the user's last, publishes the leave with reason "timeout".
// TestChannelChurnExactlyOnce holds the invariant on all three backends
// under 120 goroutines of join, heartbeat, leave and silence with two
// concurrent sweepers.
//
// Layout, and why it works on a cluster: a user's presence lives in the
// user's slot and a channel's in the channel's, so no script can touch
// both on a cluster. Channel presence therefore keeps everything it needs
// under the channel's hash tag, device level included, and is independent
// of the Tracker (a client heartbeats both; the calls share pipelines):
//
//   - presence:channel:{channel}, a hash: user ID -> "<devices>:<data
//     JSON>", one field per member; Count is its HLEN (O(1)) and Members
//     its HGETALL.
//   - presence:channel:devices:{channel}, a sorted set of the devices,
//     "<len(user)>:<user><device>", scored by expiry (ms, server time):
//     the expired ones are a ZRANGEBYSCORE away.
//   - presence:channel:occupancy:{channel}: the last occupancy event
//     published ("<at>:<count>"), the throttle's state.
//   - presence:channel:due:{slot}: per cluster slot (the tag chosen to
//     hash to that slot, as the online index's), the channels of the slot
//     scored by when a sweep must visit them (their first device expiry,
//     or a pending occupancy event). The channel's scripts keep it exact,
//     since it is in the channel's slot.
//   - presence:channel:replay:{channel}:{user_id}: first outcomes of Join,
//     Leave and Update, for replays.
//
// Every script on a channel first settles its expired devices (at most
// 256 per call), so a write never acts on a stale membership. Sweep
// reuses the Tracker's sweeper: the same 16384 shards, the same cycle
// (sweepLoop), the same rules (SweepWindow, any number of instances); per
// shard one read-only script lists the due channels, then one script per
// due channel settles it. Count and Members report the membership the
// events announced (joins minus leaves), so a subscriber that applies the
// events and Count always agree; a member whose devices all died is
// counted until their leave is announced, within about one sweep cycle
// at worst.
//
// Occupancy: when the member count changes, an occupancy event with the
// count is published at once if none was in the last
// WithOccupancyInterval (default 1 s), else after the interval ends, by
// the next Join, Leave, Update or Heartbeat on the channel (one GET and
// one HLEN per heartbeat) or by Sweep: at most one per interval per
// channel, and the last count is always published. WithoutOccupancy turns
// them off.
//
// Memory (bench/, BenchmarkChannelMemory, MEMORY USAGE on Redis 7): 198 B
// per member in a channel of 1000 members with one device each (316 B
// with two), 71 B in a channel of 100 (Redis's compact encodings), against
// 351 B (383 B) for a naive layout of sets without events or silent
// leaves. A Join, Leave or Update also leaves its replay record for
// ReplayWindow: about 150 B per member who joined in the last minute.
//
// # Typing indicators
//
// A Typing (NewTyping, the same options as New) writes a user's indicator
// {"userId","username","timestamp"} at typing:{conversation_id}:{user_id}
// for the profile's TypingTTL, throttled in Redis to one write per
// TypingThrottle, and lists a conversation's typers from its index.
//
// # Admin availability
//
// An Availability (NewAvailability, the same options as New) keeps each
// admin's availability as the bare word "online", "away", "busy" or
// "offline" with a 30 minute TTL, as seed 000's assignment code reads it
// (GET, compare with "online"). It is the library's one home for it: a
// chat package reads it from its own scripts, passing Availability.Key in
// their KEYS; on a cluster, with WithAvailabilityTag set to the chat
// deployment's hash tag, so that the script stays single-slot.
//
// # Failover
//
// Replication is asynchronous: a failover (a master that dies, or CLUSTER
// FAILOVER TAKEOVER, which promotes a replica without waiting for it to
// catch up) loses the writes the replica had not received, and those the
// old master acknowledged until it learned it was demoted. For presence
// that is the last writes to a user: a Connect, a Heartbeat (the user's
// online TTL then ends at the previous one), a status or activity change,
// a Disconnect (the connection stays until its TTL ends and a Sweep
// announces it offline), the online-index and occupancy updates, and the
// replay records (a resend across the failover runs afresh). No state is
// lost for longer than one heartbeat period: a lost heartbeat is repaired
// by the next, and a lost Connect makes the next Heartbeat return
// ErrUnknownConnection, after which the client connects again; events
// already published are not taken back, so a subscriber may see an
// online event for a connection the new master does not know.
//
// Channel presence loses the same way, per channel: a lost Join makes the
// device's next Heartbeat return ErrUnknownConnection (join again); a
// lost Leave leaves the device until its TTL ends and its leave is
// announced with reason "timeout"; a lost heartbeat is repaired by the
// next. A join or leave event published before the failover may thus be
// followed, for the same user, by the new master's own view: a subscriber
// should reconcile with Members after a failover, as after a resubscribe.
//
// Measured by the chaos tier (internal/chaos, TestTakeoverLosesNoDurableJob:
// 4 CLUSTER FAILOVER TAKEOVERs of one shard in about 40 s, connects at
// about 270/s on users of that shard): 10 of 11,174 acknowledged Connects
// lost, 2 or 3 per takeover (4 to 10 over the runs). Presence has no
// durability option: every write is repaired by the client's next
// heartbeat, which is cheaper than waiting for a replica on each one.
package presence
