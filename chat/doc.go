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
//	page, err := c.Messages(ctx, "456", 20)                    // newest first
//	d, err := c.Dashboard(ctx, "123")
//	_, err = c.Resolve(ctx, "456")                             // frees a place: the backlog moves
//
// # Guarantees
//
//   - One round trip per operation: every call is one Lua script, except
//     Assignments (one SMEMBERS) and ReadView (an admin page's roster and
//     queues: one pipeline of three scripts, or a share of a caller's
//     pipeline with QueueView). A routing call whose client has not seen
//     the latest roster change gets the roster from its script and runs
//     once more (two round trips, once per roster change).
//   - Atomicity: every assignment path (Open's least-loaded or round
//     robin hand-out, Assign, Transfer, Unassign, Resolve, the backlog
//     drain, the requeue of offline admins, AddAdmin, RemoveAdmin,
//     Reconcile) is one script that reads availability, capacity and load
//     and writes the assignment together, so whatever the concurrency no
//     conversation ever has two admins and no admin holds more than their
//     capacity. Proven with 200 concurrent Opens over 5 admins of capacity
//     10 on a real server and a 3-master cluster.
//   - Server time: activity, expiry, order stamps, response times and
//     event times come from the server's TIME.
//   - Idempotence under retry: go-redis resends a command whose reply was
//     lost after the server ran it. Open, Assign, Transfer, Unassign,
//     Resolve, SetPriority, Append and MarkRead draw a request ID before
//     the first send; the first run records its reply under it (the
//     conversation's replay key, last 8 requests, ReplayWindow), and a
//     resend returns that reply and changes nothing: no message cached
//     twice, no second move. AddAdmin and RemoveAdmin are idempotent as
//     they are; a resent Reconcile reports what was left to do.
//   - Events are published by the run that made the change, once.
//   - Bounded memory: every key has a TTL except the roster (at most
//     MaxAdmins fields); the message cache is trimmed by the script that
//     grows it; each conversation expires the conversation TTL after its last
//     activity (see "Expiry"). Inputs are bounded: IDs MaxIDLen, content
//     MaxContentLen, capacity [1, MaxCapacity], MaxAdmins, pages MaxPage.
//   - Errors: ErrInvalid for bad input, before anything is written (a bad
//     ID also matches keys.ErrInvalidKey); ErrNotFound, ErrUnknownAdmin,
//     ErrUnavailable, ErrFull and ErrNotAssigned as documented per method;
//     keys.ErrCorrupt naming the exact key for data this package did not
//     write (a key of another type, a state, score, capacity, stamp,
//     availability word, statistic, dashboard field, replay record or
//     message that does not parse). A routing script checks the types of
//     the keys it writes before its first write. A network failure, a
//     timeout or a cluster error is returned as such, never as a
//     sentinel. Every error names the operation and the key; redis.Nil
//     never escapes.
//   - Deadlines: New refuses a go-redis client without
//     ContextTimeoutEnabled.
//
// # Keys
//
//	Key pattern                              Type     TTL                                                                                                              Purpose
//	admin:{{tag}}:{admin_id}:assignments     SET      1h (conversation TTL after the latest activity of its conversations; each member expires with its conversation)  IDs of the open conversations assigned to the admin (at most its capacity)
//	chat:{{tag}}:admin:dashboard:{admin_id}  HASH     5m (WithDashboardTTL; deleted when the admin's numbers change)                                                   dashboard cache: total_active, assigned_to_me, unread_count, avg_response_time (min), resolved_today, computed_at (ms)
//	chat:{{tag}}:admin:stats:{admin_id}      HASH     25h (after the admin's last resolution or reply)                                                                 today's numbers (UTC day): day, resolved, rt_sum (ms), rt_n
//	chat:{{tag}}:admins                      HASH     none (bounded: the deployment's team, at most MaxAdmins fields)                                                  roster: admin ID -> capacity (decimal)
//	chat:{{tag}}:conversation:{id}:messages  LIST     1h (conversation TTL after the last message)                                                                     recent messages, newest first, at most 100 (WithMessageCache): JSON id, content, sender_role, sender_id, timestamp
//	chat:{{tag}}:conversation:{id}:replay    STRING   1m (after the conversation's last recorded request)                                                              first outcomes of the last 8 requests on the conversation, for replays
//	chat:{{tag}}:conversations:active        ZSET     1h (conversation TTL after the deployment's last write; members older than it are pruned)                        open conversations scored by last activity (last message, or opening), Unix ms
//	chat:{{tag}}:conversations:backlog       ZSET     1h (conversation TTL after the deployment's last write)                                                          open conversations assigned to nobody, scored like the unread queue (by priority, then age)
//	chat:{{tag}}:conversations:state         HASH     1h (conversation TTL after the deployment's last write; fields removed with their conversation)                  conversation ID -> "band stamp waiting admin": priority band, order stamp, awaiting a reply since (ms), admin
//	chat:{{tag}}:conversations:unread        ZSET     1h (conversation TTL after the deployment's last write)                                                          conversations with unread user messages, scored band x 2^51 + (2^51 - 1 - stamp): ZREVRANGE gives urgent first, oldest first
//	chat:{{tag}}:cursor                      HASH     1h (conversation TTL after the deployment's last write)                                                          stamp: last order stamp issued (ms x 512 + n); last: admin of the last assignment (round robin)
//	chat:{{tag}}:events:assigned             CHANNEL  -                                                                                                                a conversation's admin changed ("" for the backlog): JSON type, conversation_id, admin_id, previous, reason, at
//	chat:{{tag}}:events:message              CHANNEL  -                                                                                                                a message appended: JSON type, conversation_id, message, at
//	chat:{{tag}}:events:read                 CHANNEL  -                                                                                                                a conversation's unread messages read (or answered): JSON type, conversation_id, admin_id, reason, at
//	chat:{{tag}}:events:resolved             CHANNEL  -                                                                                                                a conversation resolved or expired: JSON type, conversation_id, admin_id, reason, at
//
// The {{tag}} marks the hash tag, written {support}. Two more patterns
// serve a chat and belong to presence (see its table): admin availability
// admin:{tag}:{admin_id}:presence, which every routing script reads, and
// typing indicators typing:{conversation_id}:{user_id}.
//
// # Compatibility with existing layouts
//
// The keys and values of seed 000 §5 (admin chat management) and seed 004
// §2 (typing indicators), with these changes:
//
//   - Hash tag: every key of a deployment carries the deployment's tag
//     after its first segment: admin:{tag}:{admin_id}:assignments,
//     chat:{tag}:conversations:active, ... (seed:
//     admin:{admin_id}:assignments, chat:conversations:active). The seed's
//     queues are single global keys that an assignment must update with
//     per-admin keys; one tag for the whole deployment is the only way
//     such a script stays in one cluster slot (see "Cluster"). Readers of
//     the seed's keys add the {tag} segment; types and members are the
//     seed's. keys.Namespace.NoHashTags writes the tag without braces
//     (admin:support:123:assignments, for a standalone server only): still
//     one segment more than the seed's keys, so there is no byte-identical
//     mode.
//   - Admin availability stays seed 000's bare word with its 30 min TTL,
//     written by presence (Availability), under the same tag:
//     admin:{tag}:{admin_id}:presence.
//   - Assignment: the seed checks "online and SCARD < 10" and then SADDs,
//     check-then-act across instances: two instances assign past
//     capacity. Here one script decides and writes. Admins form a roster
//     (chat:{tag}:admins) with a capacity each (default 10, the seed's).
//   - Assignments TTL: the seed's 1 h TTL on admin:{admin_id}:assignments
//     drops every assignment of an admin at once when it lapses, busy
//     conversations included. The key and type stay, and expiry is per
//     conversation: each conversation expires the conversation TTL (1 h) after
//     its own last activity, and is then removed from its admin's set
//     (see "Expiry"); the set's own TTL is only a backstop, never shorter
//     than its latest conversation's.
//   - Unread queue scores: the seed's weight + Date.now() does not order
//     by priority (a timestamp in ms dwarfs the weights 1000/100/10/1, so
//     an old low-priority conversation outranks a new urgent one). Scores
//     are band × 2^51 + (2^51 − 1 − stamp) (see "Priority queues"):
//     ZREVRANGE chat:{tag}:conversations:unread 0 -1 still lists "all
//     unread by priority", now truly so, and oldest first within a
//     priority; what breaks is reading a score as weight + timestamp and
//     writing one with the seed's formula (it would land in the low band).
//   - Active set: scores are Unix ms (the seed's example shows seconds in
//     one place and Date.now() in another).
//   - Messages: the seed's JSON {"id","content","sender_role","timestamp"}
//     (timestamp as toISOString writes it, ids numbering the
//     conversation's messages), with "sender_id" added when given; LPUSH,
//     LTRIM 0 99 and the 1 h TTL in the same script as the activity and
//     unread updates, instead of three commands apart.
//   - Dashboard: the seed's hash and fields (avg_response_time in minutes,
//     one decimal), plus computed_at; computed inside one script from the
//     deployment's keys and deleted when its numbers change, instead of
//     written by whoever last computed it.
//   - Typing: presence's Typing, seed 004's typing:{conversationId}:{userId}
//     JSON with its 3 s TTL, throttled in Redis instead of in process
//     memory, and listed from an index instead of KEYS.
//   - Keys the seed does not have: the backlog, the conversation states,
//     the roster, the cursor, the admins' daily stats, the replay records,
//     and the event channels.
//
// # Assignment
//
// A deployment has a roster of admins (AddAdmin, RemoveAdmin), each with a
// capacity. An admin is given conversations while their availability
// (presence, Availability().Set) is online and they hold fewer than their
// capacity; away and busy admins keep their conversations and get no new
// ones; offline (or never set, or expired after 30 min without Set)
// admins have their conversations requeued.
//
// Open puts a conversation in the backlog, a priority queue. Whenever a
// place may have freed or a conversation arrived (every routing call),
// the script hands the backlog out, most urgent first and oldest first
// within a priority, while some online admin has room: with LeastLoaded
// (default) to the admin with the fewest conversations, ties going to the
// first after the admin of the previous assignment in roster order (so
// equals take turns); with RoundRobin to the first admin with room after
// that one. Assign hands a conversation to a named admin (explicit),
// Transfer moves it from one admin to another, Unassign returns it to the
// backlog, Resolve closes it; each frees a place that the same script
// fills from the backlog.
//
// Each routing script reads, for every roster admin, the availability
// word, the capacity and the assignments set: its KEYS hold four keys per
// admin, which the client builds from the roster it last saw. When the
// roster changed meanwhile, the script answers with the current one
// instead of acting, and the client runs it again: a script never acts on
// a stale roster. The work per call is proportional to the roster (at
// most MaxAdmins) plus what it moves (at most MaxDrain conversations per
// call, and PRUNE expired ones).
//
// Availability is presence's, and presence.Availability.Set is a plain
// SET that runs nothing in chat: an admin who goes offline has their
// conversations requeued by the next routing call of anyone (and handed
// to others by the same script). Call Reconcile right after setting an
// admin offline, and run RunReconciler (say every 10 s) so that
// availability expiries and conversation expiries are acted on while no
// other routing call comes. What presence should expose to make that
// immediate: an availability change event or hook, or its Set as a Lua
// library a chat script can call itself.
//
// # Expiry
//
// The seed gives every chat key a 1 h TTL. Here a conversation lives the
// conversation TTL (DefaultConversationTTL, 1 h; WithConversationTTL) after
// its last activity: its
// opening or its last message, the score of chat:{tag}:conversations:active.
// That sorted set is the expiry index: every routing call removes up to
// 100 conversations whose activity is older than the TTL from their
// admin's set, the queues and the states (a "resolved" event with reason
// "expired"), and any expired conversation a call meets is treated as
// closed. The assignments set is refreshed to the conversation TTL by every
// assignment and every message of its conversations, so it never lapses
// while one of them is live, and only lapses with all of them; the shared
// keys (states, queues, cursor) are refreshed by every write. A
// conversation's message cache lapses with it (the same TTL from the last
// message), except that Resolve keeps the cache until then.
//
// # Priority queues
//
// The backlog and the unread queue (seed: "sorted by urgency") are sorted
// sets scored
//
//	score = band × 2^51 + (2^51 − 1 − stamp)
//
// with band 3 urgent, 2 high, 1 normal, 0 low (the seed's weights 1000,
// 100, 10, 1 in order) and stamp the order stamp of the conversation's
// arrival in the queue: max(last stamp + 1, server ms × 512), issued from
// chat:{tag}:cursor. Stamps strictly increase, so conversations that
// arrive in one millisecond keep their order (FIFO, up to 512 per ms
// before stamps run ahead of the clock, still in order), and stamps stay
// below 2^51 until the year 2109. Every score is an integer below 2^53,
// exactly representable in a double: no two conversations share one, and
// the highest score (ZREVRANGE, ZPOPMAX) is the most urgent, oldest
// conversation. A priority dominates whatever the ages. The backlog stamp
// is the conversation's opening, kept when it is requeued, so a requeued
// conversation goes back ahead of newer ones; the unread stamp is the
// first unread user message. SetPriority re-scores both keeping the
// stamps.
//
// # Message cache
//
// chat:{tag}:conversation:{id}:messages holds the newest 100 messages
// (WithMessageCache), newest first, with the conversation TTL. Append
// pushes, trims, sets the TTL, records the activity and updates the unread
// state in one script: a user message puts the conversation in the
// unread queue (once) and starts its wait for a reply; an admin message
// takes it out and records the response time for the assigned admin; a
// system message does neither. IDs number a conversation's messages from
// 1, so Messages pages with Before(id) by index arithmetic and pages do
// not shift as messages arrive.
//
// # Dashboard
//
// chat:{tag}:admin:dashboard:{admin_id} caches the seed's fields for 5 min
// (WithDashboardTTL). Dashboard computes it inside one script when it is
// missing (total_active: the deployment's open conversations;
// assigned_to_me; unread_count: the admin's conversations in the unread
// queue; avg_response_time and resolved_today: the UTC day's, from
// chat:{tag}:admin:stats:{admin_id}), so it is computed once across
// instances, with no lease to wait on, and served from the hash until a
// routing call deletes it because one of its numbers changed.
//
// # Events
//
// Each kind has its channel, declared in the registry:
// chat:{tag}:events:message, :assigned, :resolved and :read, JSON as
// Event documents. Subscribe picks the kinds. Pub/sub delivers at most
// once; re-read the queues after (re)subscribing.
//
// # Cluster
//
// A routing script touches the deployment's global queues together with
// per-admin and per-conversation keys, so all of them carry the
// deployment's hash tag {tag}, presence's availability included
// (presence.WithAvailabilityTag with the same tag, which New sets). The
// cost: a whole deployment, its message caches included, lives in one
// slot, on one master (and its replicas), so one deployment's throughput
// and memory are those of one Redis node, and a cluster does not spread
// it. Spread independent deployments (inboxes, tenants, regions) over the
// cluster by giving each its own tag and Chat. Typing indicators are
// presence's, tagged by conversation, and spread over the cluster. The
// test suite runs on a 3-master cluster.
//
// # Failover
//
// Replication is asynchronous: a failover can lose the last routing
// writes and messages. The state, queues and sets are written by the same
// scripts, so what survives is consistent as of some point; assignments
// lost with it are made again by the next routing calls from the
// backlog.
package chat
