package session

import (
	"time"

	"github.com/redschema/redschema/keys"
)

// The key patterns of this package. The session hash and the index share
// the user_id hash tag, so the scripts that touch both run on one slot.
var (
	sessionKey = keys.Register(keys.Pattern{
		Template: "session:user:{user_id}:{session_id}",
		Type:     keys.Hash,
		TTL:      DefaultIdleTimeout,
		TTLNote:  "sliding idle timeout, never past created_at + max lifetime (24h)",
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "one session: seed 001 fields, absolute_expiry, refresh-token hashes, caller extras",
		Seed:     "001 §3",
	})
	indexKey = keys.Register(keys.Pattern{
		Template: "session:index:{user_id}",
		Type:     keys.ZSet,
		TTL:      DefaultMaxLifetime,
		TTLNote:  "expires with the user's longest-lived session",
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  "live session IDs of a user, scored by expiry (Unix ms); pruned by every script that touches it",
		Seed:     "001 §3",
	})
	blacklistKey = keys.Register(keys.Pattern{
		Template: "session:blacklist:{token_jti}",
		Type:     keys.String,
		TTLNote:  "the token's remaining validity",
		Owner:    "session",
		Area:     keys.Sessions,
		Purpose:  `revoked JWT ID, value "1"`,
		Seed:     "001 §3",
	})
	userKey = keys.Register(keys.Pattern{
		Template: "user:{user_id}",
		Type:     keys.Hash,
		TTL:      DefaultUserTTL,
		TTLNote:  "refreshed on each request",
		Tag:      "user_id",
		Owner:    "session",
		Area:     keys.Users,
		Purpose:  "user record: device_id, login_time, last_seen, status (login|anonymous|blocked), ip_address",
		Seed:     "000 §4",
	})
)

// ms is d in whole milliseconds, for script arguments.
func ms(d time.Duration) int64 { return d.Milliseconds() }
