package presence

import (
	"strconv"
	"sync"
	"time"

	"github.com/redschema/redschema/keys"
)

// The key patterns of the package. Every key a script touches shares the
// script's hash tag: a user's presence, connections and online-index shard
// hash to the user's slot; a conversation's typing keys hash to the
// conversation's slot.
var (
	presenceKey = keys.Register(keys.Pattern{
		Template: "presence:{user_id}",
		Type:     keys.String,
		TTL:      60 * time.Second,
		TTLNote:  "profile: 60s online, 600s offline retention (seed 002); 300s online, deleted offline (seed 004)",
		Tag:      "user_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "a user's presence JSON: status, lastSeen, activeConnections, metadata (seed 002) or userId, status, lastSeen (seed 004); with LayoutSingleKey also the connections",
		Seed:     "002, 004 §1",
	})
	connsKey = keys.Register(keys.Pattern{
		Template: "connections:{user_id}",
		Type:     keys.Hash,
		TTL:      60 * time.Second,
		TTLNote:  "until the freshest connection goes stale (profile TTL after its lastSeen); stale fields pruned in Lua",
		Tag:      "user_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "a user's live connections: connection ID -> JSON connectedAt, lastSeen, metadata (LayoutHash only)",
		Seed:     "002",
	})
	onlineKey = keys.Register(keys.Pattern{
		Template: "presence:online:{slot}",
		Type:     keys.ZSet,
		TTL:      660 * time.Second,
		TTLNote:  "latest member's presence expiry + offline retention (seed 002: 60s + 600s; the TTL when the retention is 0); members past it pruned on every write",
		Tag:      "slot",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "online index shard for one cluster slot: visible users scored by presence expiry (ms) + status fraction, kept after expiry to remember last seen and for Sweep to announce silent offlines (announced: score negated)",
	})
	adminKey = keys.Register(keys.Pattern{
		Template: "admin:{admin_id}:presence",
		Type:     keys.String,
		TTL:      30 * time.Minute,
		Tag:      "admin_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "admin availability: online, away, busy or offline",
		Seed:     "000 §5",
	})
	typingKey = keys.Register(keys.Pattern{
		Template: "typing:{conversation_id}:{user_id}",
		Type:     keys.String,
		TTL:      3 * time.Second,
		Tag:      "conversation_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "typing indicator JSON: userId, username, timestamp",
		Seed:     "004 §2",
	})
	typersKey = keys.Register(keys.Pattern{
		Template: "typers:{conversation_id}",
		Type:     keys.ZSet,
		TTL:      3 * time.Second,
		TTLNote:  "typing TTL after the latest StartTyping; expired members pruned on every write",
		Tag:      "conversation_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "index of a conversation's typing JSON values scored by expiry (ms), replaces the seed's KEYS",
		Seed:     "004 §2",
	})
	throttleKey = keys.Register(keys.Pattern{
		Template: "typing:throttle:{conversation_id}:{user_id}",
		Type:     keys.String,
		TTL:      2 * time.Second,
		Tag:      "conversation_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "typing throttle: set NX for the throttle interval on each accepted StartTyping",
		Seed:     "004 §2",
	})
)

// slotTags[s] is a short alphanumeric string whose CRC16 falls in cluster
// slot s, so that presence:online:{slotTags[s]} lives in slot s.
var (
	slotTagsOnce sync.Once
	slotTags     []string
)

func slotTag(slot int) string {
	slotTagsOnce.Do(func() {
		slotTags = make([]string, keys.SlotCount)
		left := keys.SlotCount
		for i := int64(0); left > 0; i++ {
			s := strconv.FormatInt(i, 36)
			if n := keys.Slot(s); slotTags[n] == "" {
				slotTags[n] = s
				left--
			}
		}
	})
	return slotTags[slot]
}
