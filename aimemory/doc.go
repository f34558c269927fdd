// Package aimemory is short-term AI memory on Redis, in the AI platform's
// layout: capped conversations with token-budget windows, summaries of
// what the cap evicts, a user context with daily token accounting and
// budgets, read-through caches of RAG results and model responses, and
// streaming of model output. Exact token counts come from the sub-module
// github.com/redschema/redschema/aimemory/tiktoken.
//
//	mem, err := aimemory.New(rdb, aimemory.WithDailyBudget(200_000))
//	...
//	_, err = mem.Append(ctx, userID, convID, []aimemory.Message{{Role: aimemory.User, Content: question}})
//	if errors.Is(err, aimemory.ErrBudgetExceeded) { ... }
//	w, err := mem.Window(ctx, userID, convID, aimemory.WithTokenBudget(8000))
//	prompt := w.All() // system prompt, summary, newest messages that fit
//
// # Guarantees
//
//   - One round trip per operation (Summarize: one read and one store per
//     batch; EraseUser: a few per 100 conversations).
//   - Atomic and cluster-safe: every key of a user carries the user ID as
//     its hash tag, so each script touches one slot.
//   - Bounded: a conversation holds at most WithMaxMessages messages (50),
//     trimmed by the script that grows it; everything written has a TTL.
//   - The cap never evicts a first system message, nor splits a tool call
//     from its results.
//   - A window holds the system prompt, then the summary when it fits,
//     then the newest messages, never over the budget.
//   - Daily budgets: the day is the server's, and concurrent appends never
//     pass the budget together.
//   - Idempotent under retry: a resent Append (within 3 minutes)
//     reports its first outcome, and appends and counts nothing again.
//   - Racing summarizers never fold a message in twice or skip one.
//   - A failover can lose the last appends and their token counts.
//   - Errors: ErrInvalid (before any I/O), ErrBudgetExceeded,
//     ErrBudgetTooSmall, ErrStreamEnded; keys.ErrCorrupt names a key this
//     package did not write; a network failure is returned as such.
//   - Deadlines: New refuses a go-redis client without
//     ContextTimeoutEnabled.
//
// # Keys
//
//	Key pattern                                           Type    TTL                                                                                   Purpose
//	ai:memory:conv-evicted:{{user_id}}:{conversation_id}  LIST    1h (the conversation's)                                                               messages evicted by the cap awaiting the summarizer (only with WithSummarizer; at most 1000)
//	ai:memory:conv-meta:{{user_id}}:{conversation_id}     HASH    1h (the conversation's)                                                               summary of evicted messages: summary, summary_tokens, covered, lost, version, sid; epoch (the request ID of the append that began the conversation)
//	ai:memory:conv-reqs:{{user_id}}:{conversation_id}     ZSET    3m (after the conversation's last append; older members pruned)                       request memo: the appends of the last 3 minutes, each as its request ID and ID=length,evicted,tokens of the day,pending (its reply), scored by server time (ms), for resends
//	ai:memory:conv:{{user_id}}:{conversation_id}          LIST    1h (refreshed by every append (WithConversationTTL))                                  conversation: JSON messages {role, content, timestamp, tokens}, oldest first, capped (50 by default); a first system message is pinned
//	ai:memory:user-convs:{{user_id}}                      ZSET    1h (its latest conversation's)                                                        a user's live conversation IDs -> their expiry (Unix ms), expired ones pruned: EraseUser's list
//	ai:memory:user:{{user_id}}                            HASH    1d (refreshed by every write, and never before the accounted day ends (WithUserTTL))  user context: recent_topics (JSON list), preferences (JSON), last_conversation_id, total_tokens_today, tokens_day
//	ai:rag:meta:{{query_hash}}                            HASH    30m (the entry's; a lease alone lives for the lease)                                  RAG cache entry metadata and load lease (package cache's entry metadata)
//	ai:rag:query:{{query_hash}}                           STRING  30m (WithRAGTTL or per call, at most 24h)                                             RAG context cache: JSON array of relevant chunks; query_hash is the SHA-256 of the canonical query
//	ai:response-meta:{model}:{{prompt_hash}}              HASH    5m (the entry's; a lease alone lives for the lease)                                   response cache entry metadata and load lease (package cache's entry metadata)
//	ai:response:{model}:{{prompt_hash}}                   STRING  5m (WithResponseTTL or per call, at most 24h)                                         model response cache: the response text; prompt_hash is the SHA-256 of the canonical request (model, messages, parameters, user)
//
// The caches' user tags are package cache's cache:tag:{tag_name} keys (and
// their generations), written beside the entries, on the Memory's client:
// in the AI memory database (DB 4) of the AI platform's layout.
//
// The long form (round trips in detail, token counting, summaries,
// erasure, how the AI platform's layout maps, limits) is
// https://github.com/redschema/redschema/blob/main/docs/aimemory.md.
package aimemory
