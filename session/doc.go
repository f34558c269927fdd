// Package session keeps web sessions in Redis: one hash per session with a
// sliding idle timeout under an absolute lifetime cap, a per-user index,
// rotating refresh tokens with reuse detection, a JWT blacklist, user
// records with a status, and net/http middleware.
//
//	store, err := session.New(rdb) // 1h sliding, 24h cap
//	...
//	sess, tok, err := store.Create(ctx, session.Info{UserID: "42", Email: "a@example.com"})
//	http.SetCookie(w, session.Cookie("", tok.Handle, sess)) // tok.Refresh goes to the client too
//	...
//	mux.Handle("GET /me", session.Middleware(store)(me)) // session.FromContext(r.Context())
//
// # Guarantees
//
//   - One round trip per operation: one Lua script (or one command), whose
//     keys share the user_id hash tag, so it is atomic and single-slot on
//     a cluster. Store.Authenticate with hash tags off and Store.Devices
//     (List, then one pipeline of read-only scripts) are the exceptions
//     (two round trips), as is Store.Sweep (see Lifecycle events). Get
//     and Create made while others are in flight share pipelines
//     (WithPipelining; DefaultPipelines round trips in flight by
//     default): each is still its own atomic script with its own reply.
//   - Server time: every decision that involves time (liveness, sliding,
//     the blacklist's expiry check) reads the server's TIME inside the
//     script, so application clocks never matter.
//   - A revoked or expired session never comes back: every script checks
//     that the session is live before it writes, and no HSET runs on a
//     deleted key.
//   - Idempotent under retry: go-redis resends a command whose reply was
//     lost after the server ran it, and a whole pipeline after a broken
//     connection; every mutating call reports the outcome of its first
//     run (see Replays below): a resent Create finds its own session (no
//     collision, no orphan), a resent Get slides the session again as a
//     second Get would, a resent Renew its own renewal, a resent
//     RotateRefresh its own rotation (never taken for theft) or the reuse it found, a
//     resent Revoke, RevokeAll, RevokeOthers, Login or Unblock the outcome
//     recorded for ReplayWindow.
//   - No usable secret at rest: the handle (the bearer credential) and
//     the refresh tokens never reach Redis, a command, a listing or an
//     error. Keys, index entries and List hold session IDs, digests of the
//     handle's secret that can revoke a session but never authenticate it;
//     refresh tokens are kept as their SHA-256.
//   - TTLs: every key expires. A session hash expires at its idle deadline
//     (never past created_at + max lifetime), the index with the user's
//     longest-lived session, a blacklist entry with its token, a user
//     record 7 days after the last request, a request key after
//     ReplayWindow.
//   - Bounds: every duration and size has a documented limit
//     (MaxLifetimeLimit, UserTTLLimit, MaxSessionsLimit,
//     MaxRefreshHistory, TokenExpiryLimit, MaxFieldLen, MaxExtraFields,
//     MaxFieldNameLen), checked before anything is written.
//   - Errors: ErrNotFound (no live session, no user record), ErrInvalid
//     (bad input, before anything is written; a bad key segment also
//     matches keys.ErrInvalidKey), ErrInvalidToken, ErrTokenReused (the
//     session was revoked), ErrBlocked, and keys.ErrCorrupt for data this
//     package did not write, naming that exact key (see Corruption). A
//     network failure, a timeout or a cluster error is returned as such,
//     never as ErrNotFound. Every error names the operation and the key;
//     redis.Nil never escapes.
//   - Failover: replication is asynchronous, so without WithDurability
//     a failover can lose the last writes to a user: a session Create
//     returned (its handle then fails with ErrNotFound: the user is logged
//     out), a rotation (the fresh refresh token is then unknown,
//     ErrInvalidToken, and the rotated-away one is current again), a
//     Revoke, RevokeAll, RevokeOthers or RevokeToken (the revoked session
//     or JWT works again), a Users.Block (the user can log in again), an
//     Update, a Login, the sliding of a Get (the session expires at its
//     older idle deadline), and the replay records. The chaos tier
//     (internal/chaos, TestTakeoverLosesNoDurableJob: 4 CLUSTER FAILOVER
//     TAKEOVERs of one shard in about 40 s, sessions created at about
//     280/s) lost 10 of 11,298 acknowledged Creates, 2 or 3 per takeover
//     (6 to 10 over the runs). With WithDurability(1,
//     500*time.Millisecond) it lost 0 of 986 (0 in every run):
//     Create, Renew, RotateRefresh, the revocations, RevokeToken and Block return
//     nil only once the replicas asked for have the write, and otherwise
//     return their result with ErrNotDurable (the write was done; a
//     revocation can be sent again). Get, Update, Login, Unblock and
//     Logout do not wait.
//   - Deadlines: New refuses a go-redis client without
//     ContextTimeoutEnabled: true, which would ignore context deadlines
//     while a server hangs.
//
// # Keys
//
//	Key pattern                               Type    TTL                                                                                     Purpose
//	session:blacklist:{token_jti}             STRING  the token's remaining validity                                                          revoked JWT ID, value "1"
//	session:due:{{slot}}                      ZSET    25h (the latest absolute expiry of a session created in its slot + SweepWindow)         users of one cluster slot with sessions (WithEvents), scored by when Sweep must visit their index (no later than their first session expiry, Unix ms)
//	session:events:{{slot}}                   STREAM  none: capped at about the WithEvents length (XADD MAXLEN ~)                             lifecycle events of the sessions of the users in one cluster slot: kind (created, revoked, evicted, expired), user_id, session_id, at (Unix ms), reason
//	session:index:{{user_id}}                 ZSET    1d (expires with the user's longest-lived session (SweepWindow later with WithEvents))  live session IDs (digests of the handles' secrets) of a user, scored by expiry (Unix ms); pruned by every script that adds to it or lists it
//	session:request:{{user_id}}:{request_id}  STRING  1m (the replay window)                                                                  outcome of one revoke, login or unblock call, or of a rotation that found a reused token (an integer), so that the call resent after a lost reply reports its first outcome
//	session:user:{{user_id}}:{session_id}     HASH    1h (sliding idle timeout, never past created_at + max lifetime (24h))                   one session: user_id, email, created_at, last_activity, client fields, absolute_expiry, refresh-token hashes, caller extras
//	user:{{user_id}}                          HASH    7d (refreshed on each request)                                                          user record: device_id, login_time, last_seen, status (login|anonymous|blocked), ip_address
//
// The user_id placeholder is the cluster hash tag (session:user:{42}:<id>,
// session:index:{42}, session:request:{42}:<request>, user:{42}), so one
// script can touch a session, its index, a request key and the user
// record on one slot.
//
// # Compatibility with existing layouts
//
// Sessions follow seed 001 §3 (database 0:
// session:user:{user_id}:{session_id}, session:index:{user_id},
// session:blacklist:{token_jti}, the eight hash fields; 3600 s sliding and
// 86400 s maximum from §11); user records follow seed 000 §4
// (ha:user:{user_id} with the "ha:" prefix as a keys.Namespace;
// device_id, login_time and last_seen as Unix ms strings, status,
// ip_address; 7 days, refreshed on each request). The changes:
//
//   - Hash tags: the user ID is the tag; keys.Namespace.NoHashTags gives
//     the seeds' exact key bytes on a standalone server.
//   - The {session_id} segment is not the credential. In seed 001 the
//     session ID is what the client presents, so anyone who reads the
//     keyspace (SCAN, MONITOR, SLOWLOG, a backup) can take over every
//     session. Here the client holds a handle, "<secret>.<user>", and the
//     session ID is a digest of the secret (see Handles). Sessions that
//     the seed's own application wrote have no absolute_expiry and sit in
//     a set index, which this package reports as corrupt rather than
//     guess their lifetime, and their IDs are not handles: moving an
//     application onto this package means one new login per user. The old
//     hashes expire with their own TTL; the old index (no TTL) must be
//     deleted once.
//   - The index is a sorted set, not seed 001's set. Its members are the
//     session IDs; the score is each session's expiry (Unix ms). The
//     seed's index has no TTL and is "managed by cleanup", which means it
//     grows with dead IDs until a job scans it. Pruning a plain set would
//     need the script to check each member's hash, that is, to build keys
//     in Lua, which is not cluster-safe. With expiry scores, every script
//     that adds to the index or lists it drops the dead entries (Get,
//     which adds nothing, leaves them to those), and every script that
//     moves a deadline sets the index to expire exactly with the user's
//     longest-lived session. The seed's set at that key is reported as
//     corrupt (a wrong type).
//   - The index is the authority on liveness: a session is live when its
//     hash exists and its index entry has not expired. RevokeAll,
//     RevokeOthers and max-sessions eviction (WithMaxSessions) remove
//     index entries in one script on one key; the hashes they orphan can
//     never be read again, are deleted by the next call that names them,
//     and otherwise expire with their idle TTL. Revoke deletes both.
//   - Fields are added to the hash: absolute_expiry (Unix ms) holds
//     the lifetime cap, refresh_token_used holds the hashes of the
//     last few rotated-away refresh tokens (WithRefreshHistory), for reuse
//     detection, and idle_timeout (ms) a session's own idle timeout
//     (Info.IdleTimeout), only when it has one.
//   - session:request:{user_id}:{request_id} is new: it records, for
//     ReplayWindow, the outcome of one revoke, login or unblock call, or
//     of a rotation that found a reused token (see Replays).
//   - JWT blacklist entries are written with SET PXAT the token's expiry,
//     after the script compares it with the server clock: an
//     already-expired token is not written at all, and an expiry more
//     than TokenExpiryLimit ahead is refused.
//   - Seed 000's example code also writes an "active" field; this package
//     never writes or reads it, and a record without a valid status is
//     reported as corrupt (keys.ErrCorrupt) rather than guessed. Block
//     keeps the previous status in a status_before_block field for
//     Unblock.
//
// # Sessions
//
// Store.Create writes the hash (user_id, email, created_at, last_activity,
// ip_address, user_agent, device_fingerprint, refresh_token_hash,
// absolute_expiry, idle_timeout for a session with its own, plus
// caller-defined fields) and its index entry in one
// script. Store.Get returns the session and slides it in the same script:
// last_activity is set to the server time and the key's expiry moves to
// now + idle timeout (default 3600 s), capped at created_at + max lifetime
// (default 86400 s, stored in the absolute_expiry field), which sliding
// never passes. Liveness is decided by comparing that deadline, kept
// exactly as the index score, with the server time; the key's TTL is set
// relative to the script's start (PEXPIRE, never PEXPIREAT, which on Redis
// 7.0 could delete the key in the middle of the script that is extending
// it), so it may trail the deadline by the script's run time, never the
// other way. created_at and last_activity are RFC 3339 strings in UTC with
// whole seconds ("2026-01-16T10:00:00Z"); the scripts format them from the
// server's TIME. Create prunes index entries up to the current second
// (one that expired within it waits for the next prune; liveness never
// depends on pruning). "Oldest" for eviction means the session that would
// expire first, that is, the least recently active one.
//
// # Devices
//
// Store.List returns a user's live session IDs and idle deadlines;
// Store.Devices adds each session's IP address, user agent, device
// fingerprint, created_at, last_activity and absolute expiry, for a
// "where you are signed in" page. Neither slides a session: no
// last_activity, TTL or index score moves (TestDevicesReadOnly). Devices
// reads the hashes by name from Go after listing them (no script builds a
// key), one read-only script per session in one pipeline; a session that
// ends in between is left out.
//
// # Renewal
//
// Store.Renew moves a live session to a new ID, for a login on an
// existing session or a privilege change (session fixation): one script
// RENAMEs the hash (fields, extras, created_at, absolute_expiry and the
// refresh history go with it), replaces the index entry, slides the
// session and makes a new refresh token current, the old one joining the
// rotated-away history (presenting it later is reuse). It returns a new
// handle and refresh token; the old handle is ErrNotFound from then on.
// The script is atomic, so no reader ever finds both IDs live, nor
// neither (TestRenewNoWindow: 100 goroutines reading every ID of a chain
// of 200 renewals on the real server and the cluster). The absolute
// expiry does not move: renewing never extends a session's lifetime.
//
// # Lifecycle events
//
// With WithEvents, every session has one Created event and, once it ends,
// exactly one terminal event: Revoked, Evicted (WithMaxSessions) or
// Expired (Event: kind, user ID, session ID, server time, reason; never a
// handle or token). Each is appended (XADD MAXLEN ~) to the events stream
// of the user's cluster slot by the script that made the change, in the
// same atomic step, before it writes anything else: an event is never
// lost by a crash between the change and its announcement, nor doubled by
// a replayed request (a replay writes nothing). An expired session is
// announced by whichever script first removes its index entry (the one
// atomic claim): any call that prunes the user's index, a Get of it, or
// Sweep, which visits the users whose first deadline has passed (Create
// schedules them in the slot's session:due key) so that an expiry nobody
// else notices is announced too; every index outlives its last session by
// SweepWindow for that, and a sweeper (RunSweeper) must cycle within it.
// TestEventsExactlyOnceUnderChurn checks the invariant under many
// goroutines creating, renewing, revoking, evicting, listing and sweeping
// while sessions expire, on miniredis, the real server and the cluster.
//
// EventReader reads the streams of all Shards slots (one XREAD on a
// single server, a pipeline of one per slot on a cluster; a second round
// trip checks for a trim where it read events after one it had read),
// resumably
// (Cursor, ResumeEventReader): delivery is at least once for a consumer
// that saves its cursor after handling a batch, and events are kept
// until the stream of their slot is trimmed past them (about the
// WithEvents length per slot): a reader whose position was trimmed away
// is told so (ErrEventsTrimmed, with the events from the oldest kept). Cost: emitting is an XADD on the calls
// that make a change (Create also adds a ZADD and a PTTL for the
// schedule); a Get of a live session emits nothing and costs nothing
// more: no extra command. Events are off by default.
//
// # Per-session lifetime
//
// A session may have its own idle timeout and lifetime cap
// (Info.IdleTimeout, Info.MaxLifetime), for "remember me" (longer) or a
// sensitive login (shorter). The cap is the session's absolute_expiry, as
// for every session; an own idle timeout is stored in its idle_timeout
// field (ms), which Get, Update, Authenticate, Renew and Middleware slide
// by instead of the Store's, and which Renew moves with the session.
// Cookie's Max-Age runs to the session's own absolute expiry. A value in
// idle_timeout that is not 1 ms to MaxLifetimeLimit is keys.ErrCorrupt.
//
// # Handles
//
// Create returns Tokens: the handle, which the client presents on every
// request (cookie or bearer), and the first refresh token. The handle is
// "<secret>.<user>": 256 bits from crypto/rand and the user ID, each in
// unpadded URL-safe base64. ParseHandle turns it into the user ID and the
// session ID, the first 128 bits of SHA-256 over a domain string and the
// secret, which is what Redis, List and errors see. The ID names the
// session (to show a user's devices and revoke one) but cannot be turned
// back into a handle: Middleware accepts only handles.
//
// A plain digest, not a keyed HMAC: the secret is 256 random bits, so
// there is nothing to guess and no dictionary to precompute, and nothing
// short of a preimage attack on SHA-256 recovers it from an ID. A key
// would add protection only for low-entropy secrets, and it would be one
// more secret for every instance to share and rotate, whose rotation or
// loss would end every session.
//
// # Refresh tokens
//
// Refresh tokens are 256-bit random values returned once by Create and
// RotateRefresh. Only their hex SHA-256 is stored (refresh_token_hash),
// for the same reason. VerifyRefresh compares in constant time
// (crypto/subtle); RotateRefresh sends only digests and compares inside
// its script with a loop whose time depends only on the length.
// Presenting a rotated-away token again revokes the session
// (ErrTokenReused): either the thief or the user holds a stale copy.
//
// # Replays
//
// go-redis resends a command whose reply was lost (a cut connection, a
// timeout) after the server ran it. Each mutating call recognises its own
// request:
//
//   - Create and Renew draw the handle, hence the session ID, and the
//     refresh token before sending: a hash already at the new key with
//     its refresh digest is its own first run, reported as such. If the
//     call fails on the wire anyway, they revoke that session in the
//     background (nobody holds its handle).
//   - RotateRefresh draws the new token before sending: a current digest
//     equal to the new token's is its own first run, reported as success.
//     A run that finds a reused token revokes the session and records
//     that outcome at its request key (below), so the same request sent
//     again reports ErrTokenReused, not ErrNotFound.
//   - Revoke, RevokeAll, RevokeOthers, RotateRefresh, Users.Login and
//     Users.Unblock carry a random request ID; a run that changes
//     something records its outcome at
//     session:request:{user_id}:{request_id} for ReplayWindow (1 minute),
//     and the same request sent again reports it without running (a
//     rotation records only a reuse: its success is recognised by the new
//     digest). A run that changed nothing records nothing: sent again, it
//     runs again, as if sent once at that later moment.
//   - Get, Update, VerifyRefresh, Authenticate, Validate, Block, Logout
//     and RevokeToken give the same outcome when run twice. Get and
//     Create may share a pipeline with other calls (WithPipelining); a
//     resent pipeline runs every script in it again, and each still
//     reports as above. One edge
//     remains: an Update whose session is revoked between its first run
//     and the resend reports ErrNotFound; the session is over either way.
//
// # Corruption
//
// Everything read from Redis is checked, and anything this package did not
// write is keys.ErrCorrupt naming that exact key, never another key of the
// call: a wrong type (the runner names the key whose TYPE is wrong: the
// index, not the session, when the index is seed 001's set); a session
// without an integer absolute_expiry, or one further ahead than
// MaxLifetimeLimit plus a day; bad created_at or user_id, refresh digests
// that are not hex SHA-256; an index entry that is not a session ID or
// whose expiry is not Unix ms within that bound (List never shows it, and
// the error does not quote it); a user record whose status is not login,
// anonymous or blocked, or whose login_time or last_seen is not Unix ms of
// the years 1970 to 9999; a blacklist entry that is not "1"; a request key
// that is not a recorded outcome. Two documented self-repairs: index
// entries that have expired are dropped by every script that adds to the
// index or lists it, and Block overwrites a status it does not know, so that a block
// always takes effect.
//
// # Users
//
// Users keeps user records with a status (login, anonymous, blocked), the
// truth about what a user may do. Users.Validate is one script: it sets
// last_seen, refreshes the TTL and returns the status; a blocked user gets
// ErrBlocked (and the TTL is refreshed, so the block does not lapse while
// the user keeps trying); an anonymous user may read but not write
// (User.CanWrite). Block and Unblock take effect at once. Logout deletes
// the record but keeps a blocked one, so logging out never lifts a block.
//
// # Input
//
// Empty IDs, oversize fields (MaxFieldLen), too many extra fields
// (MaxExtraFields, checked by Create and, against what the hash already
// holds, inside Update's script), reserved extra field names, durations
// below 1ms or beyond their limit (MaxLifetimeLimit, UserTTLLimit, the
// idle timeout above the max lifetime), caps beyond MaxSessionsLimit and
// MaxRefreshHistory, and blacklist expiries more than TokenExpiryLimit
// ahead of the server clock fail with ErrInvalid before anything is
// written.
//
// # HTTP
//
// Middleware reads the handle from "Authorization: Bearer" or a cookie,
// loads and slides the session, optionally validates the user record in
// the same script (WithUsers, Store.Authenticate: still one round trip),
// and puts both in the request context; anything missing, malformed,
// expired, revoked or blocked is 401, an unreachable store or corrupt data
// 503. Cookie builds the cookie with HttpOnly, Secure, SameSite=Lax, Path
// "/" and Max-Age until the absolute expiry.
//
// CSRF: CSRFToken derives a token from the handle's secret (SHA-256 under
// its own domain string, so it is neither the handle nor the session ID,
// and cannot be derived from what Redis holds); it is stored nowhere and
// changes when Renew gives the session a new handle. Middleware puts it
// in the request context (CSRFTokenFromContext) for pages to render, and
// with WithCSRF refuses with 403, before calling the store, an unsafe
// request (not GET, HEAD, OPTIONS or TRACE) that authenticates with the
// cookie and does not carry the token in the X-CSRF-Token header or the
// csrf_token form field. Bearer requests are not checked: browsers never
// add that header to a cross-site request.
package session
