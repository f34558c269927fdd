// Package presence tracks multi-device online status, heartbeats, last seen,
// custom statuses and typing indicators in Redis, on the layouts of seed 002
// (presence service), seed 004 §1-2 (chat presence and typing) and seed 000
// §5 (admin availability).
//
// A Tracker is built with New(client, opts...) and is safe for concurrent
// use. Every operation is one round trip: Connect, Heartbeat, Disconnect,
// SetStatus, SetActivity, Connections, StartTyping, StopTyping and Typers
// are each one Lua script whose keys share one hash tag (one cluster slot);
// SetAdminStatus and AdminStatus are one command; Get, GetMany, Online,
// OnlineNow and OnlineCount are one pipeline (split per node on a cluster,
// never a cross-slot command); Sweep is one pipeline of one script per
// index shard it visits.
// Time decisions (staleness, expiry, throttle) use the server's TIME inside
// the scripts, so app clocks never disagree. All trackers writing one
// namespace must use the same Profile.
//
// A typical server calls Connect when a socket opens, Heartbeat every
// Profile.Heartbeat, Disconnect when it closes, and runs a Subscription to
// push Event values (presence diffs) to its own clients; one or more
// instances run RunSweeper so that users whose devices all died without a
// Disconnect are announced offline too (see "Silent offlines"). Get, GetMany and
// Online answer "is this user online" (for the system: Invisible counts as
// online; Presence.Public gives what others may see); OnlineNow and
// OnlineCount list everyone visible; Connections lists a user's devices.
//
// # Keys
//
// | Key pattern | Type | TTL | Purpose |
// |---|---|---|---|
// | `presence:{{user_id}}` | STRING | 60s online + 600s offline (seed 002); 300s, deleted offline (seed 004) | presence JSON (with LayoutSingleKey: and the connections) |
// | `connections:{{user_id}}` | HASH | 60s after the freshest connection's lastSeen | connection ID -> connection JSON (LayoutHash only) |
// | `presence:online:{{slot}}` | ZSET | latest member's expiry + retention (60s + 600s; + the TTL with no retention) | online index shard of one cluster slot; keeps silent expiries for Sweep |
// | `admin:{{admin_id}}:presence` | STRING | 30m | admin availability (seed 000 §5) |
// | `typing:{{conversation_id}}:{user_id}` | STRING | 3s | typing JSON (seed 004 §2) |
// | `typers:{{conversation_id}}` | ZSET | 3s after the latest StartTyping | typing values by expiry |
// | `typing:throttle:{{conversation_id}}:{user_id}` | STRING | 2s | typing throttle marker |
//
// The `{{x}}` marks the hash tag: `presence:{{user_id}}` is written
// `presence:{42}`. With keys.Namespace.NoHashTags the keys are
// byte-identical to the seeds'. Events are published on the pub/sub channel
// `presence:events` (after the namespace prefix, see Tracker.Channel;
// channels are not keys and hold no memory). On a cluster the scripts'
// PUBLISH reaches subscribers on every node.
//
// # Values
//
// With the Seed002 profile (the default) the presence key holds
// {"status","lastSeen","activeConnections","metadata":{"device","lastActivity"}}
// and each connection {"connectedAt","lastSeen","metadata":{"device",
// "userAgent","ip","socketId"}}, times in Unix milliseconds, field names as
// seed 002 writes them, key order as its examples, empty fields omitted.
// With Seed004 the presence key holds {"userId","status","lastSeen"} as seed
// 004 writes it. With LayoutSingleKey either ends with a "connections"
// member (see Layouts). Status is "online", "away", "busy", "invisible" or
// "offline"; seed 002 readers that test status == "online" &&
// activeConnections > 0 see away, busy and invisible users as not online.
//
// # Layouts
//
// WithLayout chooses where connections live. LayoutHash (the default) is
// seed 002's: every key and value above is byte-compatible with the seed.
// LayoutSingleKey drops the connections hash and appends the connections to
// the presence JSON, as its last member:
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
// What keeps working for seed code: GET presence:X, MGET or pipelined GETs,
// JSON.parse(v).status / lastSeen / activeConnections / metadata, and the
// key's TTL (seed 004's JSON gains the same member). What breaks: HGETALL
// connections:X (and HGET, HLEN) find nothing; such readers must read
// JSON.parse(v).connections instead (Connections does). The two layouts
// must not write one namespace at once, and there is no migration: a
// tracker of one layout does not see the other's connections and takes the
// users offline on its next write.
//
// Why: with seed 002's example metadata each connection JSON is about 190
// bytes, over Redis's hash-max-listpack-value (64), so the hash is a real
// hashtable with per-field overhead; one string per user saves that, a key
// and the hash's TTL. Measured (bench/RESULTS.md): 600 bytes per
// online user with two connections against 998 for the seed layout, 40%
// fewer (the index adds about 27 B per user at a million users). The
// saving moves with the metadata's size through the allocator's size
// classes (a 125-character user agent measured 44%).
//
// Costs: every GET of the presence key (Get, GetMany, Online, seed
// readers) transfers the connections too, 466 instead of 118 bytes per
// user in the benchmark, so GetMany moves about 4x the bytes; Go
// decodes only the part before "connections" (the scripts write it last),
// and Presence never carries connections. Each write decodes and
// re-encodes the whole value: a heartbeat takes about 20 us of Redis time
// against 17 us with the hash layout. The value is bounded by the connection and metadata limits: the
// presence part plus at most WithMaxConnections connections of at most
// 6 x MaxConnIDLen (an ID escaped at worst) + WithMaxMetadata + 40 bytes,
// about 83 KB with the defaults (32, 1024) in the worst case and a few
// hundred bytes per connection in practice; lower WithMaxConnections to
// tighten it.
//
// # What changed from the seeds, and why
//
//   - Stale connections: seed 002 relies on the hash TTL, which a user's
//     other devices keep refreshing, so a dead tab stays "connected"
//     forever. Every script prunes connections whose lastSeen (server time)
//     is a TTL old before it counts them; activeConnections is always the
//     live count, and a user whose last live connection goes stale is turned
//     offline by the next operation on them (or expires with the key).
//   - Atomicity: seed 002 runs HSET/EXPIRE/SETEX and HDEL/HLEN as separate
//     commands, so concurrent connect and disconnect can leave a user online
//     with no connection or offline with one. Here each operation is one
//     script over the user's keys.
//   - Seed 004 deletes the presence key on any disconnect, so closing one
//     of two tabs shows the user offline. The Seed004 profile writes the
//     seed's presence JSON but counts devices in the connections hash like
//     seed 002, and deletes the key only when the last one goes.
//   - Offline retention: seed 002 keeps "last seen" 600 s after going
//     offline; Disconnect of the last connection writes status "offline" with
//     a PX of the profile's Retention. Seed 004 deletes the key (Retention 0).
//     A user whose devices all die silently (no Disconnect and no later
//     operation) has the key expire at the online TTL as in the seeds (so
//     seed readers see them offline on time); Get and GetMany then still
//     report their last seen for the retention, from the online index whose
//     members are kept that long (not for Invisible users, nor
//     WithoutOnlineIndex). Nothing runs in Redis when a key expires, so
//     the expiry publishes nothing by itself: Sweep announces it (see
//     "Silent offlines").
//   - Duplicated metadata: seed 002 copies the userAgent into the presence
//     key; here it lives only in the connection that has it, and the
//     presence metadata keeps the device (of the freshest connection) and
//     lastActivity, only when set.
//   - Heartbeat of an unknown connection returns ErrUnknownConnection and
//     writes nothing for it (it has no metadata to re-register); the client
//     calls Connect again.
//   - Online lists: seed 002 checks a caller's list with MGET (cross-slot on
//     a cluster); GetMany and Online pipeline GETs. A list of everyone online uses an
//     index instead of KEYS/SCAN: one sorted set per cluster slot
//     (`presence:online:{tag}` where the tag is chosen to hash to that slot),
//     member user ID, score the presence expiry in ms (plus a status
//     fraction, see "Silent offlines"). Because the shard is in the user's
//     slot, the same script updates it: it is exact, never lagging Get.
//     Members past expiry + retention (the sweep window) are pruned on
//     every write to the shard and a shard expires with its latest member,
//     so it is bounded by the users of that slot online within the last
//     TTL + window (readers skip members past their expiry). The cost moves to the
//     reader: OnlineNow reads all 16384 shards in one pipeline. Invisible
//     users are not indexed. The index costs memory (bench/RESULTS.md:
//     about 27 B per online user at a million users, more per user when few
//     users share a slot); WithoutOnlineIndex turns it off.
//   - Typing: seed 004 throttles in process memory (broken with several app
//     instances) and lists typers with KEYS. Here the throttle is a SET NX PX
//     in the same script as the write, and each conversation has a sorted
//     set of its typing values scored by expiry, so Typers is one read-only
//     script.
//   - Admin status (seed 000) stays a plain string with its 30 min TTL; it
//     takes online, away, busy or offline, not invisible.
//   - Bounds: at most WithMaxConnections live connections per user (32;
//     Connect beyond gives ErrTooManyConnections), metadata at most
//     WithMaxMetadata bytes (1024), IDs at most keys.MaxSegmentLen bytes,
//     connection IDs and usernames at most 256 bytes.
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
// SweepWindow old (the retention, or the TTL when it is zero: with Seed004
// the index now keeps a silent expiry for 300 s, not until the next write
// to its shard, and Get reports no last seen since the retention is zero).
// So every shard must be swept within the window; RunSweeper refuses a
// cycle longer than it.
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
// # Errors
//
// Bad input returns an error wrapping keys.ErrInvalidKey, ErrInvalidInput or
// ErrInvalidStatus before anything is written. Data in Redis that does not
// decode returns an error matching keys.ErrCorrupt that names the key.
// redis.Nil never escapes: a missing key is an Offline user.
package presence
