// Package session keeps web sessions, their per-user index, refresh-token
// hashes, a JWT blacklist (seed 001 §3) and user records with a status
// (seed 000 §4) in Redis.
//
// # Keys
//
//	| Key pattern | Type | TTL | Purpose |
//	|---|---|---|---|
//	| `session:user:{{user_id}}:{session_id}` | HASH | 1h sliding idle timeout, never past created_at + 24h | one session: seed 001's fields, absolute_expiry, refresh-token hashes, caller extras |
//	| `session:index:{{user_id}}` | ZSET | expires with the user's longest-lived session (≤ 24h) | live session IDs of a user, scored by expiry in Unix ms |
//	| `session:blacklist:{token_jti}` | STRING | the token's remaining validity | revoked JWT ID, value "1" |
//	| `user:{{user_id}}` | HASH | 7d, refreshed on each request | user record: device_id, login_time, last_seen, status, ip_address |
//
// The user_id placeholder is the cluster hash tag (session:user:{42}:abc,
// session:index:{42}, user:{42}), so one script can touch a session, its
// index and the user record on one slot. keys.Namespace.NoHashTags gives
// the seeds' exact key bytes on a standalone server.
//
// # Sessions
//
// Store.Create makes a 128-bit session ID with crypto/rand and writes the
// hash (user_id, email, created_at, last_activity, ip_address, user_agent,
// device_fingerprint, refresh_token_hash, plus caller-defined fields) and
// its index entry in one script. Store.Get returns the session and slides
// it in the same script: last_activity is set to the server time and the
// key's expiry moves to now + idle timeout (default 3600 s), capped at
// created_at + max lifetime (default 86400 s, stored in the
// absolute_expiry field), which sliding never passes. Liveness is
// decided by comparing that deadline, kept exactly as the index score,
// with the server time; the key's TTL is set relative to the script's
// start (PEXPIRE, never PEXPIREAT, which on Redis 7.0 could delete the key
// in the middle of the script that is extending it), so it may trail the
// deadline by the script's run time, never the other way. created_at and
// last_activity are RFC 3339 strings in UTC with whole seconds, byte for
// byte as seed 001 shows them ("2026-01-16T10:00:00Z"); the scripts format
// them from the server's TIME.
//
// Every operation is one round trip (Store.Authenticate with hash tags
// off is the one exception: two) and every read-then-write is one Lua
// script, so a concurrent Get or Update can never bring back a revoked or
// expired session: each script checks that the session is live before it
// writes, and no HSET runs on a deleted key.
//
// # What this package changes from the seeds, and why
//
//   - The index is a sorted set, not seed 001's set. Its members are the
//     same session IDs; the score is each session's expiry (Unix ms). The
//     seed's index has no TTL and is "managed by cleanup", which means it
//     grows with dead IDs until a job scans it. Pruning a plain set would
//     need the script to check each member's hash, that is, to build keys
//     in Lua, which is not cluster-safe. With expiry scores, every script
//     that touches the index drops the dead entries (ZREMRANGEBYSCORE) and
//     sets the index to expire exactly with the user's longest-lived
//     session, so it never outlives the user's last session.
//   - The index is the authority on liveness: a session is live when its
//     hash exists and its index entry has not expired. RevokeAll,
//     RevokeOthers and max-sessions eviction (WithMaxSessions) remove
//     index entries in one script on one key; the hashes they orphan can
//     never be read again, are deleted by the next call that names them,
//     and otherwise expire with their idle TTL. Revoke deletes both at
//     once.
//   - "Oldest" for eviction means the session that would expire first,
//     that is, the least recently active one.
//   - Two fields are added to the hash: absolute_expiry (Unix ms) holds
//     the lifetime cap, and refresh_token_used holds the hashes of the
//     last few rotated-away refresh tokens (WithRefreshHistory), for reuse
//     detection.
//   - Refresh tokens are 256-bit random values returned once by Create and
//     RotateRefresh. Only their hex SHA-256 is stored (refresh_token_hash,
//     the seed's field). A fast unsalted hash is sound here because the
//     tokens are high-entropy random values, not passwords: there is no
//     dictionary to try. VerifyRefresh compares in constant time
//     (crypto/subtle); RotateRefresh compares inside its script, over
//     digests, with a loop whose time depends only on the length.
//     Presenting a rotated-away token again revokes the session
//     (ErrTokenReused): either the thief or the user holds a stale copy.
//   - JWT blacklist entries are written with SET PXAT the token's expiry,
//     after the script compares it with the server clock: an
//     already-expired token is not written at all.
//   - Seed 000's user record: status (login, anonymous, blocked) is the
//     truth. The seed's example code also writes an "active" field; this
//     package never writes or reads it, and a record without a valid
//     status is reported as corrupt (keys.ErrCorrupt) rather than guessed.
//     login_time and last_seen are Unix milliseconds strings, as in the
//     seed. Users.Validate is one script: it sets last_seen, refreshes the
//     7-day TTL and returns the status; a blocked user gets ErrBlocked
//     (and the TTL is refreshed, so the block does not lapse while the
//     user keeps trying); an anonymous user may read but not write
//     (User.CanWrite). Block and Unblock take effect at once. Logout
//     deletes the record but keeps a blocked one, so logging out never
//     lifts a block.
//
// # Errors and input
//
// Empty IDs, oversize fields (MaxFieldLen), too many extra fields
// (MaxExtraFields, checked by Create and, against what the hash already
// holds, inside Update's script), reserved extra field names, and bad
// durations (≤ 0, idle timeout above the max lifetime) fail with
// ErrInvalidInput before anything is written; key-building
// errors also match keys.ErrInvalidKey. Data in Redis that does not parse
// is a *keys.CorruptError naming the key. redis.Nil never escapes.
//
// # HTTP
//
// Store.Middleware reads the session handle (Session.Handle: session ID
// and user ID) from "Authorization: Bearer" or a cookie, loads and slides
// the session, optionally validates the user record in the same script
// (Store.Authenticate: still one round trip), and puts both in the request
// context; anything missing, expired, revoked or blocked is 401.
// Store.Cookie builds the cookie with HttpOnly, Secure, SameSite=Lax,
// Path "/" and Max-Age until the absolute expiry.
package session
