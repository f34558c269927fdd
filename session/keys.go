package session

import "github.com/redschema/redschema/keys"

// The key patterns of this package. The keys of one user share the
// user_id hash tag, so the scripts that touch several run on one slot.
var (
	sessionKey = keys.MustCompile(keys.Pattern{
		Template: "session:user:{user_id}:{session_id}",
		Type:     keys.Hash,
		TTL:      defaultIdleTimeout,
		TTLNote:  "sliding idle timeout, never past created_at + max lifetime (24h)",
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "one session: user_id, email, created_at, last_activity, client fields, absolute_expiry, refresh-token hashes, caller extras",
		Seed:     "001 §3",
	})
	indexKey = keys.MustCompile(keys.Pattern{
		Template: "session:index:{user_id}",
		Type:     keys.ZSet,
		TTL:      defaultLifetime,
		TTLNote:  "expires with the user's longest-lived session (SweepWindow later with WithEvents)",
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "live session IDs (digests of the handles' secrets) of a user, scored by expiry (Unix ms); pruned by every script that adds to it or lists it",
		Seed:     "001 §3",
	})
	blacklistKey = keys.MustCompile(keys.Pattern{
		Template: "session:blacklist:{token_jti}",
		Type:     keys.String,
		TTLNote:  "the token's remaining validity",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  `revoked JWT ID, value "1"`,
		Seed:     "001 §3",
	})
	requestKey = keys.MustCompile(keys.Pattern{
		Template: "session:request:{user_id}:{request_id}",
		Type:     keys.String,
		TTL:      replayWindow,
		TTLNote:  "the replay window",
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "outcome of one revoke, login or unblock call, or of a rotation that found a reused token (an integer), so that the call resent after a lost reply reports its first outcome",
	})
	rotationKey = keys.MustCompile(keys.Pattern{
		Template: "session:rotation:{user_id}:{session_id}",
		Type:     keys.String,
		TTL:      defaultRotationGrace,
		TTLNote:  "the rotation grace (WithRotationGrace); deleted when the session is revoked for reuse",
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "the latest refresh-token rotation of one session: the rotated-away token's SHA-256, the new token's SHA-256 and the new token sealed (AES-256-GCM) under a key derived from the rotated-away token, never in clear, so that a client retrying with the old token gets the same new one",
	})
	userKey = keys.MustCompile(keys.Pattern{
		Template: "user:{user_id}",
		Type:     keys.Hash,
		TTL:      defaultUserTTL,
		TTLNote:  "refreshed on each request",
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "user record: device_id, login_time, last_seen, status (login|anonymous|blocked), ip_address",
		Seed:     "000 §4",
	})
)

// The keys of lifecycle events (WithEvents): one events stream and one
// sweep schedule per cluster slot, each in the slot of the users it
// serves (its {slot} tag hashes there), so that the scripts on a user's
// keys write them atomically.
var (
	eventsKey = keys.MustCompile(keys.Pattern{
		Template: "session:events:{slot}",
		Type:     keys.Stream,
		TTLNote:  "none: capped at about the WithEvents length (XADD MAXLEN ~)",
		Tag:      "slot",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "lifecycle events of the sessions of the users in one cluster slot: kind (created, revoked, evicted, expired), user_id, session_id, at (Unix ms), reason",
	})
	dueKey = keys.MustCompile(keys.Pattern{
		Template: "session:due:{slot}",
		Type:     keys.ZSet,
		TTL:      defaultLifetime + sweepWindow,
		TTLNote:  "the latest absolute expiry of a session created in its slot + SweepWindow",
		Tag:      "slot",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "users of one cluster slot with sessions (WithEvents), scored by when Sweep must visit their index (no later than their first session expiry, Unix ms)",
	})
)

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	return keys.Schema{
		Templates: []*keys.Template{sessionKey, indexKey, blacklistKey, requestKey, rotationKey, userKey, eventsKey, dueKey},
		Decoders:  decoders(),
	}
}
