// Package chat runs admin support chat on Redis: conversations handed
// to admins under capacity (least-loaded, round robin or explicit) with a
// priority backlog, an unread queue, a message cache, dashboards, typed
// events, and typing and availability from the presence package.
//
//	c, err := chat.New(rdb, chat.WithTag("support")) // rdb created with ContextTimeoutEnabled: true
//	...
//	err = c.AddAdmin(ctx, "123", 10)                           // the team, capacity 10 each
//	err = c.Availability().Set(ctx, "123", presence.Online)    // presence's admin availability
//	a, err := c.Open(ctx, "456", chat.High)                    // a.Admin: "123", or "" in the backlog
//	m, err := c.Append(ctx, "456", chat.Message{Content: "Hello", SenderRole: chat.User})
//	page, err := c.Messages(ctx, "456", 20, 0)                 // newest first
//	d, err := c.Dashboard(ctx, "123")
//	_, err = c.Resolve(ctx, "456")                             // frees a place: the backlog moves
//
// # Guarantees
//
//   - One round trip per operation: one Lua script (Assignments and
//     Inspector.ReadView excepted; a stale roster costs one more, once per
//     change).
//   - No conversation ever has two admins and no admin holds more than
//     their capacity, whatever the concurrency: each assignment path is one
//     script that reads availability, capacity and load and writes.
//   - The backlog and the unread queue give the most urgent first, oldest
//     first within a priority.
//   - Server time: activity, expiry, order stamps, response times and event
//     times come from the server's TIME.
//   - Idempotent under retry: a resent Open, Assign, Transfer, Unassign,
//     Resolve, SetPriority, Append or MarkRead returns its first reply and
//     changes nothing.
//   - Events are published once, by the run that made the change (pub/sub:
//     at most once delivery).
//   - Bounded memory: every key has a TTL except the roster (at most
//     100 fields); a conversation expires the conversation TTL after
//     its last activity; inputs are bounded.
//   - A deployment lives in one cluster slot (its hash tag): spread
//     independent deployments with their own tags.
//   - A failover can lose the last writes; what survives is consistent and
//     lost assignments are made again from the backlog.
//   - Errors: ErrInvalid, ErrNotFound, ErrUnknownAdmin, ErrUnavailable,
//     ErrFull, ErrNotAssigned; keys.ErrCorrupt names a key this package did
//     not write; a network failure is returned as such.
//   - Deadlines: New refuses a go-redis client without
//     ContextTimeoutEnabled.
//
// # Keys
//
//	Key pattern                              Type     TTL                                                                                                              Purpose
//	admin:{admin_id}:assignments             SET      1h (conversation TTL after the latest activity of its conversations; each member expires with its conversation)  IDs of the open conversations assigned to the admin (at most its capacity) (WithoutTag)
//	admin:{{tag}}:{admin_id}:assignments     SET      1h (conversation TTL after the latest activity of its conversations; each member expires with its conversation)  IDs of the open conversations assigned to the admin (at most its capacity)
//	chat:admin:dashboard:{admin_id}          HASH     5m (WithDashboardTTL; deleted when the admin's numbers change)                                                   dashboard cache: total_active, assigned_to_me, unread_count, avg_response_time (min), resolved_today, computed_at (ms) (WithoutTag)
//	chat:admin:stats:{admin_id}              HASH     25h (after the admin's last resolution or reply)                                                                 today's numbers (UTC day): day, resolved, rt_sum (ms), rt_n (WithoutTag)
//	chat:admins                              HASH     none (bounded: the deployment's team, at most 100 fields)                                                        roster: admin ID -> capacity (decimal) (WithoutTag)
//	chat:conversation:{id}:messages          LIST     1h (conversation TTL after the last message)                                                                     recent messages, newest first, at most 100 (WithMessageCache): JSON id, content, sender_role, sender_id, timestamp (WithoutTag)
//	chat:conversation:{id}:requests          ZSET     3m (after the conversation's last recorded request; older members pruned)                                        request memo: the requests of the last 3 minutes on the conversation, each as its ID and ID=first reply, scored by server time (ms), for resends (WithoutTag)
//	chat:conversations:active                ZSET     1h (conversation TTL after the deployment's last write; members older than it are pruned)                        open conversations scored by last activity (last message, or opening), Unix ms (WithoutTag)
//	chat:conversations:backlog               ZSET     1h (conversation TTL after the deployment's last write)                                                          open conversations assigned to nobody, scored like the unread queue (by priority, then age) (WithoutTag)
//	chat:conversations:state                 HASH     1h (conversation TTL after the deployment's last write; fields removed with their conversation)                  conversation ID -> "band stamp waiting admin": priority band, order stamp, awaiting a reply since (ms), admin (WithoutTag)
//	chat:conversations:unread                ZSET     1h (conversation TTL after the deployment's last write)                                                          conversations with unread user messages, scored band x 2^51 + (2^51 - 1 - stamp): ZREVRANGE gives urgent first, oldest first (WithoutTag)
//	chat:cursor                              HASH     1h (conversation TTL after the deployment's last write)                                                          stamp: last order stamp issued (ms x 512 + n); last: admin of the last assignment (round robin) (WithoutTag)
//	chat:{{tag}}:admin:dashboard:{admin_id}  HASH     5m (WithDashboardTTL; deleted when the admin's numbers change)                                                   dashboard cache: total_active, assigned_to_me, unread_count, avg_response_time (min), resolved_today, computed_at (ms)
//	chat:{{tag}}:admin:stats:{admin_id}      HASH     25h (after the admin's last resolution or reply)                                                                 today's numbers (UTC day): day, resolved, rt_sum (ms), rt_n
//	chat:{{tag}}:admins                      HASH     none (bounded: the deployment's team, at most 100 fields)                                                        roster: admin ID -> capacity (decimal)
//	chat:{{tag}}:conversation:{id}:messages  LIST     1h (conversation TTL after the last message)                                                                     recent messages, newest first, at most 100 (WithMessageCache): JSON id, content, sender_role, sender_id, timestamp
//	chat:{{tag}}:conversation:{id}:requests  ZSET     3m (after the conversation's last recorded request; older members pruned)                                        request memo: the requests of the last 3 minutes on the conversation, each as its ID and ID=first reply, scored by server time (ms), for resends
//	chat:{{tag}}:conversations:active        ZSET     1h (conversation TTL after the deployment's last write; members older than it are pruned)                        open conversations scored by last activity (last message, or opening), Unix ms
//	chat:{{tag}}:conversations:backlog       ZSET     1h (conversation TTL after the deployment's last write)                                                          open conversations assigned to nobody, scored like the unread queue (by priority, then age)
//	chat:{{tag}}:conversations:state         HASH     1h (conversation TTL after the deployment's last write; fields removed with their conversation)                  conversation ID -> "band stamp waiting admin": priority band, order stamp, awaiting a reply since (ms), admin
//	chat:{{tag}}:conversations:unread        ZSET     1h (conversation TTL after the deployment's last write)                                                          conversations with unread user messages, scored band x 2^51 + (2^51 - 1 - stamp): ZREVRANGE gives urgent first, oldest first
//	chat:{{tag}}:cursor                      HASH     1h (conversation TTL after the deployment's last write)                                                          stamp: last order stamp issued (ms x 512 + n); last: admin of the last assignment (round robin)
//	chat:events:assigned                     CHANNEL  -                                                                                                                a conversation's admin changed ("" for the backlog): JSON type, conversation_id, admin_id, previous, reason, at (WithoutTag)
//	chat:events:message                      CHANNEL  -                                                                                                                a message appended: JSON type, conversation_id, message, at (WithoutTag)
//	chat:events:read                         CHANNEL  -                                                                                                                a conversation's unread messages read (or answered): JSON type, conversation_id, admin_id, reason, at (WithoutTag)
//	chat:events:resolved                     CHANNEL  -                                                                                                                a conversation resolved or expired: JSON type, conversation_id, admin_id, reason, at (WithoutTag)
//	chat:{{tag}}:events:assigned             CHANNEL  -                                                                                                                a conversation's admin changed ("" for the backlog): JSON type, conversation_id, admin_id, previous, reason, at
//	chat:{{tag}}:events:message              CHANNEL  -                                                                                                                a message appended: JSON type, conversation_id, message, at
//	chat:{{tag}}:events:read                 CHANNEL  -                                                                                                                a conversation's unread messages read (or answered): JSON type, conversation_id, admin_id, reason, at
//	chat:{{tag}}:events:resolved             CHANNEL  -                                                                                                                a conversation resolved or expired: JSON type, conversation_id, admin_id, reason, at
//
// The {{tag}} marks the hash tag, written {support}. The patterns marked
// (WithoutTag) are the home-automation backend's own keys, which
// WithoutTag uses on a standalone server. Two more patterns serve a chat
// and belong to presence (see its table): admin availability
// admin:{tag}:{admin_id}:presence (admin:{admin_id}:presence with
// WithoutTag), which every routing script reads, and typing indicators
// typing:{conversation_id}:{user_id}.
//
// The long form (assignment, expiry, priority scores, dashboard, the
// cluster's cost, how the reference layouts map, limits) is
// https://github.com/redschema/redschema/blob/main/docs/chat.md.
package chat
