// Package session keeps web sessions in Redis: one hash per session with a
// sliding idle timeout under an absolute lifetime cap, a per-user index,
// rotating refresh tokens with reuse detection, renewal, lifecycle
// events, a JWT blacklist, user records with a status (Users), and
// net/http middleware with CSRF protection.
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
//   - One round trip per operation: one script (or command) on the user's
//     slot; Devices, Sweep, and Authenticate without hash tags take two.
//   - Server time decides liveness, sliding and the blacklist's expiry.
//   - A revoked or expired session never comes back: every script checks
//     that the session is live before it writes.
//   - Idempotent under retry: a call that go-redis resends after a lost
//     reply reports its first outcome (a resent RotateRefresh is no theft),
//     and a client that retries RotateRefresh with its old token after an
//     error gets the same new token (WithRotationGrace).
//   - No usable secret at rest: handles and refresh tokens never reach
//     Redis, a listing or an error; only digests do.
//   - Every key expires; every duration and size has a limit, checked
//     before anything is written (ErrInvalid).
//   - Errors: data the package did not write is keys.ErrCorrupt naming the
//     key; an outage is returned as such, never as ErrNotFound.
//   - Failover: without WithDurability a failover can lose the last writes
//     to a user; with it, nil means on the replicas, or ErrNotDurable.
//   - Deadlines: New refuses a client without ContextTimeoutEnabled: true.
//
// # Keys
//
//	Key pattern                                Type    TTL                                                                                         Purpose
//	session:blacklist:{token_jti}              STRING  the token's remaining validity                                                              revoked JWT ID, value "1"
//	session:due:{{slot}}                       ZSET    25h (the latest absolute expiry of a session created in its slot + SweepWindow)             users of one cluster slot with sessions (WithEvents), scored by when Sweep must visit their index (no later than their first session expiry, Unix ms)
//	session:events:{{slot}}                    STREAM  none: capped at about the WithEvents length (XADD MAXLEN ~)                                 lifecycle events of the sessions of the users in one cluster slot: kind (created, revoked, evicted, expired), user_id, session_id, at (Unix ms), reason
//	session:index:{{user_id}}                  ZSET    1d (expires with the user's longest-lived session (SweepWindow later with WithEvents))      live session IDs (digests of the handles' secrets) of a user, scored by expiry (Unix ms); pruned by every script that adds to it or lists it
//	session:request:{{user_id}}:{request_id}   STRING  3m (the replay window)                                                                      outcome of one revoke, login or unblock call, or of a rotation that found a reused token (an integer), so that the call resent after a lost reply reports its first outcome
//	session:rotation:{{user_id}}:{session_id}  STRING  3m (the rotation grace (WithRotationGrace); deleted when the session is revoked for reuse)  the latest refresh-token rotation of one session: the rotated-away token's SHA-256, the new token's SHA-256 and the new token sealed (AES-256-GCM) under a key derived from the rotated-away token, never in clear, so that a client retrying with the old token gets the same new one
//	session:user:{{user_id}}:{session_id}      HASH    1h (sliding idle timeout, never past created_at + max lifetime (24h))                       one session: user_id, email, created_at, last_activity, client fields, absolute_expiry, refresh-token hashes, caller extras
//	user:{{user_id}}                           HASH    7d (refreshed on each request)                                                              user record: device_id, login_time, last_seen, status (login|anonymous|blocked), ip_address
//
// The user_id placeholder is the cluster hash tag (session:user:{42}:<id>,
// session:index:{42}, session:request:{42}:<request>, user:{42}), so one
// script can touch a session, its index, a request key and the user
// record on one slot. With keys.Namespace.NoHashTags the keys are
// byte-identical to the AI platform's sessions (docs/ai-platform.md) and,
// with its ha: prefix as the keys.Namespace, the home-automation
// backend's user records (docs/home-automation.md), on a standalone
// server only.
//
// The long form (every guarantee in full, handles and refresh tokens,
// renewal, events, replays, corruption, failover figures, how the
// reference layouts map, limits) is
// https://github.com/redschema/redschema/blob/main/docs/session.md.
package session
