package presence

import (
	"time"

	"github.com/redschema/redschema/keys"
)

// The key patterns of the package. Every key a script touches shares the
// script's hash tag: a user's presence, connections and online-index shard
// hash to the user's slot; a conversation's typing keys hash to the
// conversation's slot.
var (
	presenceKey = keys.MustCompile(keys.Pattern{
		Template: "presence:{user_id}",
		Type:     keys.String,
		TTL:      60 * time.Second,
		TTLNote:  "profile TTL after the freshest heartbeat; the retention after going offline (default 60s, 600s)",
		Tag:      "user_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "a user's presence JSON: status, lastSeen, activeConnections, metadata (FormatDetailed) or userId, status, lastSeen (FormatCompact); with LayoutSingleKey also the connections",
		Seed:     "002, 004 §1",
	})
	connsKey = keys.MustCompile(keys.Pattern{
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
	onlineKey = keys.MustCompile(keys.Pattern{
		Template: "presence:online:{slot}",
		Type:     keys.ZSet,
		TTL:      660 * time.Second,
		TTLNote:  "latest member's presence expiry + offline retention (the TTL when the retention is 0); members past it pruned on every write that may add one (all but the heartbeat of a live connection) and by Sweep",
		Tag:      "slot",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "online index shard for one cluster slot: visible users scored by presence expiry (ms) + status fraction, kept after expiry to remember last seen and for Sweep to announce silent offlines (announced: score negated)",
	})
	requestsKey = keys.MustCompile(keys.Pattern{
		Template: "presence:requests:{user_id}",
		Type:     keys.ZSet,
		TTL:      replayWindow,
		TTLNote:  "after the user's last recorded request; older members pruned",
		Tag:      "user_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "request memo: a user's Connect, Disconnect, SetStatus, SetActivity (and offline-taking Heartbeat) requests of the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends",
	})
	sweepsKey = keys.MustCompile(keys.Pattern{
		Template: "presence:sweeps:{slot}",
		Type:     keys.ZSet,
		TTL:      replayWindow,
		TTLNote:  "after the shard's last sweep that announced someone; older members pruned",
		Tag:      "slot",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "request memo: the sweeps of an online index shard that announced someone in the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends",
	})
	adminKey = keys.MustCompile(keys.Pattern{
		Template: "admin:{admin_id}:presence",
		Type:     keys.String,
		TTL:      availabilityTTL,
		Tag:      "admin_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "admin availability: online, away, busy or offline",
		Seed:     "000 §5",
	})
	availTaggedKey = keys.MustCompile(keys.Pattern{
		Template: "admin:{tag}:{admin_id}:presence",
		Type:     keys.String,
		TTL:      availabilityTTL,
		Tag:      "tag",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "admin availability under a deployment-wide hash tag (WithAvailabilityTag), for scripts that read it with other {tag} keys",
		Seed:     "000 §5",
	})
	typingKey = keys.MustCompile(keys.Pattern{
		Template: "typing:{conversation_id}:{user_id}",
		Type:     keys.String,
		TTL:      3 * time.Second,
		TTLNote:  "profile typing TTL",
		Tag:      "conversation_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "typing indicator JSON: userId, username, timestamp",
		Seed:     "004 §2",
	})
	typersKey = keys.MustCompile(keys.Pattern{
		Template: "typers:{conversation_id}",
		Type:     keys.ZSet,
		TTL:      3 * time.Second,
		TTLNote:  "typing TTL after the latest Typing.Start; expired members pruned on every write",
		Tag:      "conversation_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "index of a conversation's typing JSON values scored by expiry (ms), replaces the chat app's KEYS scan",
		Seed:     "004 §2",
	})
	throttleKey = keys.MustCompile(keys.Pattern{
		Template: "typing:throttle:{conversation_id}:{user_id}",
		Type:     keys.String,
		TTL:      2 * time.Second,
		TTLNote:  "profile typing throttle",
		Tag:      "conversation_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "typing throttle: set NX to the request ID of each accepted Typing.Start",
		Seed:     "004 §2",
	})
	typingRequestsKey = keys.MustCompile(keys.Pattern{
		Template: "typing:requests:{conversation_id}:{user_id}",
		Type:     keys.ZSet,
		TTL:      replayWindow,
		TTLNote:  "after the last recorded request; older members pruned",
		Tag:      "conversation_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "request memo: a user's Typing.Stop (and unthrottled Typing.Start) requests in a conversation of the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends",
	})
	// With WithOtherWriters the typing helpers live outside typing:, so
	// that typing:{conversation_id}:* holds the indicators alone, as the
	// chat app's own code and monitoring expect.
	otherThrottleKey = keys.MustCompile(keys.Pattern{
		Template: "typers:throttle:{conversation_id}:{user_id}",
		Type:     keys.String,
		TTL:      2 * time.Second,
		TTLNote:  "profile typing throttle",
		Tag:      "conversation_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "typing throttle with WithOtherWriters (outside typing:): set NX to the request ID of each accepted Typing.Start",
		Seed:     "004 §2",
	})
	otherTypingRequestsKey = keys.MustCompile(keys.Pattern{
		Template: "typers:requests:{conversation_id}:{user_id}",
		Type:     keys.ZSet,
		TTL:      replayWindow,
		TTLNote:  "after the last recorded request; older members pruned",
		Tag:      "conversation_id",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "request memo with WithOtherWriters (outside typing:): a user's Typing.Stop (and unthrottled Typing.Start) requests in a conversation of the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends",
	})
	chanMembersKey = keys.MustCompile(keys.Pattern{
		Template: "presence:channel:{channel}",
		Type:     keys.Hash,
		TTL:      660 * time.Second,
		TTLNote:  "sweep window after the channel's last device expiry",
		Tag:      "channel",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "a channel's members (Channels): user ID -> \"<devices>:<data JSON>\", one field per user however many devices",
	})
	chanDevicesKey = keys.MustCompile(keys.Pattern{
		Template: "presence:channel:devices:{channel}",
		Type:     keys.ZSet,
		TTL:      660 * time.Second,
		TTLNote:  "sweep window after the channel's last device expiry; expired devices removed, their silent leaves announced, by every write to the channel and by Sweep",
		Tag:      "channel",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "a channel's devices: \"<len(user_id)>:<user_id><conn_id>\" scored by expiry (ms)",
	})
	chanOccKey = keys.MustCompile(keys.Pattern{
		Template: "presence:channel:occupancy:{channel}",
		Type:     keys.String,
		TTL:      660 * time.Second,
		TTLNote:  "as the channel's members, at least twice the occupancy interval",
		Tag:      "channel",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "a channel's last occupancy event: \"<at ms>:<count>\", for the throttle",
	})
	chanDueKey = keys.MustCompile(keys.Pattern{
		Template: "presence:channel:due:{slot}",
		Type:     keys.ZSet,
		TTL:      660 * time.Second,
		TTLNote:  "sweep window after its latest due time",
		Tag:      "slot",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "channels of one cluster slot scored by when Channels.Sweep must visit them (first device expiry or pending occupancy event, ms)",
	})
	chanRequestsKey = keys.MustCompile(keys.Pattern{
		Template: "presence:channel:requests:{channel}:{user_id}",
		Type:     keys.ZSet,
		TTL:      replayWindow,
		TTLNote:  "after the last recorded request; older members pruned",
		Tag:      "channel",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "request memo: a user's Join, Leave and Update requests in a channel of the last 3 minutes, each as its ID and ID=first reply, scored by server time (ms), for resends",
	})
	chanEventsChannel = keys.MustCompile(keys.Pattern{
		Template: "presence:channel:events:{channel}",
		Type:     keys.Channel,
		Tag:      "channel",
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "a channel's presence events: JSON type join, leave, update or occupancy, userId, data, reason, count, at",
	})
	eventsChannel = keys.MustCompile(keys.Pattern{
		Template: "presence:events",
		Type:     keys.Channel,
		Owner:    "presence",
		Area:     keys.Presence,
		Purpose:  "presence changes as others see them: JSON userId, status, previous, at",
	})
)

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	return keys.Schema{
		Templates: []*keys.Template{presenceKey, connsKey, onlineKey, requestsKey, sweepsKey, adminKey, availTaggedKey, typingKey, typersKey, throttleKey, typingRequestsKey, otherThrottleKey, otherTypingRequestsKey, chanMembersKey, chanDevicesKey, chanOccKey, chanDueKey, chanRequestsKey, chanEventsChannel, eventsChannel},
		Decoders:  decoders(),
	}
}
