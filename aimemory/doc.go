// Package aimemory is short-term AI memory on Redis: capped conversations
// with token-budget windows, summaries of what the cap evicts, a user
// context with daily token accounting and budgets, read-through caches of
// RAG results and model responses, and streaming of model output.
//
//	mem, err := aimemory.New(rdb, aimemory.WithDailyBudget(200_000))
//	...
//	_, err = mem.Append(ctx, userID, convID, []aimemory.Message{{Role: aimemory.User, Content: question}})
//	if errors.Is(err, aimemory.ErrBudgetExceeded) { ... }
//	w, err := mem.Window(ctx, userID, convID, aimemory.TokenBudget(8000))
//	prompt := w.All() // system prompt, summary, newest messages that fit
//
// # Guarantees
//
//   - One round trip per operation: Append is one script (push, evict past
//     the cap, refresh every TTL, record the request, account the user's
//     tokens of the day, list the conversation for its user); Window is
//     one MULTI/EXEC of plain reads (or, for caps above 100 with a token
//     budget, one read-only script that returns only what fits); User,
//     AddTopics, SetPreferences and DeleteConversation are one script
//     each; ReadView (an admin page's user and window) is one pipeline
//     of two read-only scripts. Summarize is one read and one store per batch of evicted
//     messages; EraseUser is a few round trips per 100 conversations.
//   - Atomic and cluster-safe: every key of a user (conversations and
//     their companions, the context, the conversation list) carries the
//     user ID as its hash tag, so each script touches one slot.
//   - Bounded: a conversation holds at most WithMaxMessages messages (50);
//     the script that grows it trims it. The cap never evicts a first
//     system message, and evicts the tool results that follow an evicted
//     call with it. Everything written has a TTL: a conversation and its
//     companions one hour after the last append (WithConversationTTL;
//     reads do not extend it), the user context 24 hours after its last
//     write and never before the day it accounts ends, cached entries
//     their TTL. Pending evicted messages are capped at MaxPending;
//     request IDs at 128 per conversation.
//   - Windows: the system prompt always (a token budget below it fails
//     with ErrBudgetTooSmall); then the summary when it fits; then the
//     newest messages, never splitting a message from the tool results
//     that follow it, never over the budget or LastN.
//   - Server time: the day of the token accounting is the server clock's
//     day in the configured zone (WithTimeZone, DST included); the daily
//     budget is checked and counted in the same script as the append, so
//     concurrent appends never pass it together.
//   - Idempotent under retry: go-redis resends a command whose reply was
//     lost. Append (and Stream.End) records its request ID, so a resend
//     reports the state without appending or counting again; a summary
//     store carries its own ID; the other writes are idempotent.
//   - Summaries: Summarize stores a summary only if nobody stored one
//     since it read the pending messages, so racing processes never fold
//     a message in twice or skip one.
//   - Caches: package cache's Store: one load across all processes on a
//     miss, loader errors never cached, per-call Bypass, Refresh and
//     CacheTTL.
//   - Errors: ErrInvalid for bad input, before any I/O (and
//     keys.ErrInvalidKey for a bad ID); ErrBudgetExceeded;
//     ErrBudgetTooSmall; ErrStreamEnded; keys.ErrCorrupt naming the key
//     for data this package did not write (a refused write writes
//     nothing). A network failure, a timeout or a cluster error is
//     returned as such, never as a business error. redis.Nil never
//     escapes.
//   - Failover: replication is asynchronous, so a failover can lose the
//     last appends, their token counts and request IDs (a resend after a
//     failover may then append again).
//   - Deadlines: create the client with ContextTimeoutEnabled: true (New
//     refuses one without).
//
// # Keys
//
//	Key pattern                                           Type    TTL                                                                                   Purpose
//	ai:memory:conv-evicted:{{user_id}}:{conversation_id}  LIST    1h (the conversation's)                                                               messages evicted by the cap awaiting the summarizer (only with WithSummarizer; at most 1000)
//	ai:memory:conv-meta:{{user_id}}:{conversation_id}     HASH    1h (the conversation's)                                                               summary of evicted messages: summary, summary_tokens, covered, lost, version, sid
//	ai:memory:conv-reqs:{{user_id}}:{conversation_id}     ZSET    1h (the conversation's)                                                               request IDs of the last 128 appends (a resent append is recognised), scored by server time
//	ai:memory:conv:{{user_id}}:{conversation_id}          LIST    1h (refreshed by every append (WithConversationTTL))                                  conversation: JSON messages {role, content, timestamp, tokens}, oldest first, capped (50 by default); a first system message is pinned
//	ai:memory:user-convs:{{user_id}}                      ZSET    1h (its latest conversation's)                                                        a user's live conversation IDs -> their expiry (Unix ms), expired ones pruned: EraseUser's list
//	ai:memory:user:{{user_id}}                            HASH    1d (refreshed by every write, and never before the accounted day ends (WithUserTTL))  user context: recent_topics (JSON list), preferences (JSON), last_conversation_id, total_tokens_today, tokens_day
//	ai:rag:meta:{{query_hash}}                            HASH    30m (the entry's; a lease alone lives for the lease)                                  RAG cache entry metadata and load lease (package cache's entry metadata)
//	ai:rag:query:{{query_hash}}                           STRING  30m (WithRAGTTL or per call, at most 24h)                                             RAG context cache: JSON array of relevant chunks; query_hash is the SHA-256 of the canonical query
//	ai:response-meta:{model}:{{prompt_hash}}              HASH    5m (the entry's; a lease alone lives for the lease)                                   response cache entry metadata and load lease (package cache's entry metadata)
//	ai:response:{model}:{{prompt_hash}}                   STRING  5m (WithResponseTTL or per call, at most 24h)                                         model response cache: the response text; prompt_hash is the SHA-256 of the canonical request (model, messages, parameters, user)
//
// # Compatibility with existing layouts
//
// Keys and values follow seed 001 §7 (database 4, AI memory) and §6 (the
// pubsub:ai:response channel), with these changes:
//
//   - ai:memory:conv:{conversation_id} is ai:memory:conv:{user_id}:{conversation_id},
//     tagged by the user ID. The append script must touch the
//     conversation and the user's context (daily tokens) atomically, and
//     per-user erasure must find a user's conversations without SCAN:
//     both need the user in the key and every key of a user in one slot.
//     The cost: one user's memory lives on one cluster node (a user with
//     very many conversations does not spread), and readers that know
//     only a conversation ID must also know its user.
//     keys.Namespace.NoHashTags gives untagged keys on a standalone
//     server.
//   - Messages keep the seed's JSON item {"role", "content", "timestamp",
//     "tokens"}, in that order with "tokens" last, and add "tool_calls"
//     and "tool_call_id" when set, and the role "tool". Timestamps are RFC
//     3339 in UTC with milliseconds. Messages written by other
//     applications in another field order are read too.
//   - The seed's TTL of 3600 s "after last activity" is refreshed by
//     appends, not by reads.
//   - ai:memory:user:{user_id} keeps the seed's fields (recent_topics as
//     a JSON list, most recent first and bounded; preferences as a JSON
//     string; last_conversation_id; total_tokens_today) and adds
//     tokens_day, the date total_tokens_today counts, so that the count
//     starts again at midnight without a job. Its TTL (24 h) never ends
//     before that day does.
//   - ai:rag:query:{query_hash} and ai:response:{model}:{prompt_hash} keep
//     the seed's STRING values (a JSON array of chunks; the response
//     text) and TTLs (30 min, 5 min); the hashes are hex SHA-256 of a
//     canonical JSON request (model, messages without timestamps or token
//     counts, parameters with sorted keys, the user when scoped), the
//     hash is the hash tag. package cache adds a metadata hash beside
//     each entry (ai:rag:meta:{query_hash},
//     ai:response-meta:{model}:{prompt_hash}) for its lease and hit
//     counts, and the tags cache:tag:{ai-response:<user_id>} and
//     cache:tag:{ai-rag:<user_id>} (package cache's keys, in its area)
//     for entries scoped to a user.
//   - New keys: a conversation's summary (ai:memory:conv-meta:...), its
//     evicted messages awaiting the summarizer (ai:memory:conv-evicted:...),
//     its recent request IDs (ai:memory:conv-reqs:...), and a user's list
//     of conversations (ai:memory:user-convs:{user_id}).
//   - Streaming uses pubsub:ai:response with the payload
//     {conversation_id, chunk} in the seed's envelope (package pubsub);
//     an empty chunk ends a stream, after its message is in the
//     conversation.
//
// # Token counting
//
// A message's Tokens is the caller's count; zero asks the Memory's
// Counter (WithCounter). The default, ApproxCounter, estimates a token per
// four bytes. The sub-module github.com/redschema/redschema/aimemory/tiktoken
// counts exactly with OpenAI's vocabularies, embedded in the binary: no
// download at run time, and a program that does not import it does not
// carry them.
//
// # Summaries
//
// With WithSummarizer, the messages the cap evicts are kept in the
// conversation's pending list (at most MaxPending; beyond, the oldest are
// dropped and counted in Window.Lost) and Append calls Summarize, which
// hands them to the Summarizer with the current summary, in batches, and
// stores the result beside the conversation, with its TTL. A Summarizer
// that fails leaves them pending (Appended.SummaryErr); call Summarize
// again later. Window returns the summary and how many messages it
// covers.
//
// # Erasure
//
// DeleteConversation deletes one conversation. EraseUser deletes every
// conversation of a user (listed in ai:memory:user-convs:{user_id}, which
// each append maintains, so no SCAN), the user's context, and the cached
// responses and RAG results scoped to the user (through their cache
// tags), and nothing of anyone else. It leaves the generations of the
// user's cache tags (an opaque ID for an hour, which stops a load in
// flight from storing the user's entry again). An append running at the
// same time can re-create what it appends.
package aimemory
