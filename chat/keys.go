package chat

import (
	"slices"
	"time"

	"github.com/redschema/redschema/keys"
)

// Every key of one chat deployment carries the deployment's hash tag
// ({tag}, WithTag), so that each script touches one cluster slot: the
// reference layout's global queues and the per-admin and per-conversation keys they
// are updated with live together. Admin availability is presence's
// admin:{tag}:{admin_id}:presence (presence.WithAvailabilityTag), and
// typing indicators are presence's typing:{conversation_id}:{user_id}.
// WithoutTag uses the untagged twins below instead.
var (
	assignmentsKey = keys.MustCompile(keys.Pattern{
		Template: "admin:{tag}:{admin_id}:assignments",
		Type:     keys.Set,
		TTL:      defaultConversationTTL,
		TTLNote:  "conversation TTL after the latest activity of its conversations; each member expires with its conversation",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "IDs of the open conversations assigned to the admin (at most its capacity)",
		Seed:     "000 §5",
	})
	activeKey = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:conversations:active",
		Type:     keys.ZSet,
		TTL:      defaultConversationTTL,
		TTLNote:  "conversation TTL after the deployment's last write; members older than it are pruned",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "open conversations scored by last activity (last message, or opening), Unix ms",
		Seed:     "000 §5",
	})
	unreadKey = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:conversations:unread",
		Type:     keys.ZSet,
		TTL:      defaultConversationTTL,
		TTLNote:  "conversation TTL after the deployment's last write",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "conversations with unread user messages, scored band x 2^51 + (2^51 - 1 - stamp): ZREVRANGE gives urgent first, oldest first",
		Seed:     "000 §5",
	})
	backlogKey = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:conversations:backlog",
		Type:     keys.ZSet,
		TTL:      defaultConversationTTL,
		TTLNote:  "conversation TTL after the deployment's last write",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "open conversations assigned to nobody, scored like the unread queue (by priority, then age)",
	})
	stateKey = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:conversations:state",
		Type:     keys.Hash,
		TTL:      defaultConversationTTL,
		TTLNote:  "conversation TTL after the deployment's last write; fields removed with their conversation",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "conversation ID -> \"band stamp waiting admin\": priority band, order stamp, awaiting a reply since (ms), admin",
	})
	rosterKey = keys.MustCompile(keys.Pattern{
		Template:   "chat:{tag}:admins",
		Type:       keys.Hash,
		Persistent: "bounded: the deployment's team, at most 100 fields",
		Tag:        "tag",
		Owner:      "chat",
		Area:       keys.Chat,
		Purpose:    "roster: admin ID -> capacity (decimal)",
	})
	cursorKey = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:cursor",
		Type:     keys.Hash,
		TTL:      defaultConversationTTL,
		TTLNote:  "conversation TTL after the deployment's last write",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "stamp: last order stamp issued (ms x 512 + n); last: admin of the last assignment (round robin)",
	})
	messagesKey = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:conversation:{id}:messages",
		Type:     keys.List,
		TTL:      defaultConversationTTL,
		TTLNote:  "conversation TTL after the last message",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "recent messages, newest first, at most 100 (WithMessageCache): JSON id, content, sender_role, sender_id, timestamp",
		Seed:     "000 §5",
	})
	requestsKey = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:conversation:{id}:requests",
		Type:     keys.ZSet,
		TTL:      replayWindow,
		TTLNote:  "after the conversation's last recorded request; older members pruned",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "request memo: the requests of the last 3 minutes on the conversation, each as its ID and ID=first reply, scored by server time (ms), for resends",
	})
	dashboardKey = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:admin:dashboard:{admin_id}",
		Type:     keys.Hash,
		TTL:      defaultDashboardTTL,
		TTLNote:  "WithDashboardTTL; deleted when the admin's numbers change",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "dashboard cache: total_active, assigned_to_me, unread_count, avg_response_time (min), resolved_today, computed_at (ms)",
		Seed:     "000 §5",
	})
	statsKey = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:admin:stats:{admin_id}",
		Type:     keys.Hash,
		TTL:      statsTTL,
		TTLNote:  "after the admin's last resolution or reply",
		Tag:      "tag",
		Owner:    "chat",
		Area:     keys.Chat,
		Purpose:  "today's numbers (UTC day): day, resolved, rt_sum (ms), rt_n",
	})

	messageChannel = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:events:message", Type: keys.Channel, Tag: "tag", Owner: "chat", Area: keys.Chat,
		Purpose: "a message appended: JSON type, conversation_id, message, at",
	})
	assignedChannel = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:events:assigned", Type: keys.Channel, Tag: "tag", Owner: "chat", Area: keys.Chat,
		Purpose: "a conversation's admin changed (\"\" for the backlog): JSON type, conversation_id, admin_id, previous, reason, at",
	})
	resolvedChannel = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:events:resolved", Type: keys.Channel, Tag: "tag", Owner: "chat", Area: keys.Chat,
		Purpose: "a conversation resolved or expired: JSON type, conversation_id, admin_id, reason, at",
	})
	readChannel = keys.MustCompile(keys.Pattern{
		Template: "chat:{tag}:events:read", Type: keys.Channel, Tag: "tag", Owner: "chat", Area: keys.Chat,
		Purpose: "a conversation's unread messages read (or answered): JSON type, conversation_id, admin_id, reason, at",
	})
)

// untagged maps each template to its WithoutTag twin: the home-automation
// backend's own key, without the deployment's tag segment (admin
// availability is presence's admin:{admin_id}:presence). A standalone
// server only: the keys of one script then span many slots.
var untagged = map[*keys.Template]*keys.Template{
	assignmentsKey:  keys.MustCompile(twin(assignmentsKey, "admin:{admin_id}:assignments")),
	activeKey:       keys.MustCompile(twin(activeKey, "chat:conversations:active")),
	unreadKey:       keys.MustCompile(twin(unreadKey, "chat:conversations:unread")),
	backlogKey:      keys.MustCompile(twin(backlogKey, "chat:conversations:backlog")),
	stateKey:        keys.MustCompile(twin(stateKey, "chat:conversations:state")),
	rosterKey:       keys.MustCompile(twin(rosterKey, "chat:admins")),
	cursorKey:       keys.MustCompile(twin(cursorKey, "chat:cursor")),
	messagesKey:     keys.MustCompile(twin(messagesKey, "chat:conversation:{id}:messages")),
	requestsKey:     keys.MustCompile(twin(requestsKey, "chat:conversation:{id}:requests")),
	dashboardKey:    keys.MustCompile(twin(dashboardKey, "chat:admin:dashboard:{admin_id}")),
	statsKey:        keys.MustCompile(twin(statsKey, "chat:admin:stats:{admin_id}")),
	messageChannel:  keys.MustCompile(twin(messageChannel, "chat:events:message")),
	assignedChannel: keys.MustCompile(twin(assignedChannel, "chat:events:assigned")),
	resolvedChannel: keys.MustCompile(twin(resolvedChannel, "chat:events:resolved")),
	readChannel:     keys.MustCompile(twin(readChannel, "chat:events:read")),
}

// twin is t's pattern under template, without a hash tag, for
// WithoutTag.
func twin(t *keys.Template, template string) keys.Pattern {
	p := t.Pattern()
	p.Template, p.Tag = template, ""
	p.Purpose += " (WithoutTag)"
	return p
}

// statsTTL keeps an admin's daily numbers past the end of their UTC day.
const statsTTL = 25 * time.Hour

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	tagged := []*keys.Template{assignmentsKey, activeKey, unreadKey, backlogKey, stateKey, rosterKey, cursorKey, messagesKey, requestsKey, dashboardKey, statsKey, messageChannel, assignedChannel, resolvedChannel, readChannel}
	ts := slices.Clone(tagged)
	dec := decoders()
	for _, t := range tagged {
		ts = append(ts, untagged[t])
		if d, ok := dec[t]; ok {
			dec[untagged[t]] = d
		}
	}
	return keys.Schema{Templates: ts, Decoders: dec}
}
