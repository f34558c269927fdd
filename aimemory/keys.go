package aimemory

import (
	"time"

	"github.com/redschema/redschema/keys"
)

// Defaults and bounds of the options (the defaults are the AI platform's,
// docs/ai-platform.md). A value outside its bounds fails New (or the
// call) with ErrInvalid.
const (
	// defaultMessages is the cap of a conversation (the AI platform's
	// maximum length).
	defaultMessages = 50
	// maxMessages bounds WithMaxMessages.
	maxMessages = 10000
	// defaultConversationTTL is how long a conversation lives after its
	// last append (the AI platform's hour after last activity).
	defaultConversationTTL = time.Hour
	// maxConversationTTL bounds WithConversationTTL.
	maxConversationTTL = 7 * 24 * time.Hour
	// defaultUserTTL is how long a user's context lives after its last
	// write (the AI platform's 86400s).
	defaultUserTTL = 24 * time.Hour
	// maxUserTTL bounds WithUserTTL.
	maxUserTTL = 30 * 24 * time.Hour
	// defaultMessageBytes is the largest encoded message Append takes.
	defaultMessageBytes = 64 << 10
	// maxMessageBytes bounds WithMaxMessageBytes.
	maxMessageBytes = 4 << 20
	// maxTokens bounds the token count of one message, of a window's
	// budget and of a summary.
	maxTokens = 1 << 24
	// maxAppend is the most messages one Append takes (and at most the
	// conversation's cap).
	maxAppend = 100
	// maxDailyBudget bounds a daily token budget.
	maxDailyBudget = int64(1) << 40
	// defaultTopics is how many recent topics a user's context keeps.
	defaultTopics = 10
	// maxTopics bounds WithMaxTopics.
	maxTopics = 100
	// maxTopicBytes bounds one topic.
	maxTopicBytes = 256
	// maxPreferencesBytes bounds a user's preferences document.
	maxPreferencesBytes = 64 << 10
	// maxPending is how many evicted messages wait for the summarizer
	// (beyond it the oldest are dropped and counted in Summary.Lost).
	maxPending = 1000
	// defaultRAGTTL is the freshness of a cached RAG result (the AI
	// platform's 1800s).
	defaultRAGTTL = 30 * time.Minute
	// defaultResponseTTL is the freshness of a cached model response
	// (the AI platform's 300s).
	defaultResponseTTL = 5 * time.Minute
	// maxCacheTTL bounds the caches' TTLs (the AI platform's maximum AI
	// memory TTL, 86400s).
	maxCacheTTL = 24 * time.Hour
	// replayWindow is how long a conversation remembers an append's
	// request ID and outcome, for go-redis's resends: a resend that
	// reaches the server within it reports that outcome and appends
	// nothing, however many other appends ran meanwhile. It is longer
	// than go-redis's whole default retry schedule (at worst about 2
	// minutes from the first run to the last resend; see docs/aimemory.md)
	// and than any call whose context deadline is shorter.
	replayWindow = 3 * time.Minute
)

var (
	convKey = keys.MustCompile(keys.Pattern{
		Template: "ai:memory:conv:{user_id}:{conversation_id}",
		Type:     keys.List,
		TTL:      defaultConversationTTL,
		TTLNote:  "refreshed by every append (WithConversationTTL)",
		Tag:      "user_id",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "conversation: JSON messages {role, content, timestamp, tokens}, oldest first, capped (50 by default); a first system message is pinned",
		Seed:     "001 §7",
	})
	metaKey = keys.MustCompile(keys.Pattern{
		Template: "ai:memory:conv-meta:{user_id}:{conversation_id}",
		Type:     keys.Hash,
		TTL:      defaultConversationTTL,
		TTLNote:  "the conversation's",
		Tag:      "user_id",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "summary of evicted messages: summary, summary_tokens, covered, lost, version, sid; epoch (the request ID of the append that began the conversation)",
	})
	reqsKey = keys.MustCompile(keys.Pattern{
		Template: "ai:memory:conv-reqs:{user_id}:{conversation_id}",
		Type:     keys.ZSet,
		TTL:      replayWindow,
		TTLNote:  "after the conversation's last append; older members pruned",
		Tag:      "user_id",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "request memo: the appends of the last 3 minutes, each as its request ID and ID=length,evicted,tokens of the day,pending (its reply), scored by server time (ms), for resends",
	})
	evictedKey = keys.MustCompile(keys.Pattern{
		Template: "ai:memory:conv-evicted:{user_id}:{conversation_id}",
		Type:     keys.List,
		TTL:      defaultConversationTTL,
		TTLNote:  "the conversation's",
		Tag:      "user_id",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "messages evicted by the cap awaiting the summarizer (only with WithSummarizer; at most 1000)",
	})
	userKey = keys.MustCompile(keys.Pattern{
		Template: "ai:memory:user:{user_id}",
		Type:     keys.Hash,
		TTL:      defaultUserTTL,
		TTLNote:  "refreshed by every write, and never before the accounted day ends (WithUserTTL)",
		Tag:      "user_id",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "user context: recent_topics (JSON list), preferences (JSON), last_conversation_id, total_tokens_today, tokens_day",
		Seed:     "001 §7",
	})
	indexKey = keys.MustCompile(keys.Pattern{
		Template: "ai:memory:user-convs:{user_id}",
		Type:     keys.ZSet,
		TTL:      defaultConversationTTL,
		TTLNote:  "its latest conversation's",
		Tag:      "user_id",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "a user's live conversation IDs -> their expiry (Unix ms), expired ones pruned: EraseUser's list",
	})
	ragKey = keys.MustCompile(keys.Pattern{
		Template: "ai:rag:query:{query_hash}",
		Type:     keys.String,
		TTL:      defaultRAGTTL,
		TTLNote:  "WithRAGTTL or per call, at most 24h",
		Tag:      "query_hash",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "RAG context cache: JSON array of relevant chunks; query_hash is the SHA-256 of the canonical query",
		Seed:     "001 §7",
	})
	ragMetaKey = keys.MustCompile(keys.Pattern{
		Template: "ai:rag:meta:{query_hash}",
		Type:     keys.Hash,
		TTL:      defaultRAGTTL,
		TTLNote:  "the entry's; a lease alone lives for the lease",
		Tag:      "query_hash",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "RAG cache entry metadata and load lease (package cache's entry metadata)",
	})
	responseKey = keys.MustCompile(keys.Pattern{
		Template: "ai:response:{model}:{prompt_hash}",
		Type:     keys.String,
		TTL:      defaultResponseTTL,
		TTLNote:  "WithResponseTTL or per call, at most 24h",
		Tag:      "prompt_hash",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "model response cache: the response text; prompt_hash is the SHA-256 of the canonical request (model, messages, parameters, user)",
		Seed:     "001 §7",
	})
	responseMetaKey = keys.MustCompile(keys.Pattern{
		Template: "ai:response-meta:{model}:{prompt_hash}",
		Type:     keys.Hash,
		TTL:      defaultResponseTTL,
		TTLNote:  "the entry's; a lease alone lives for the lease",
		Tag:      "prompt_hash",
		Owner:    "aimemory",
		Area:     keys.AIMemory,
		Purpose:  "response cache entry metadata and load lease (package cache's entry metadata)",
	})
)

// The RAG and response caches are package cache Stores on the Memory's
// client, so the tags of their user-scoped entries
// (cache:tag:{ai-response:<user_id>}, cache:tag:{ai-rag:<user_id>}, with
// their generations and, during an erasure, their dying sets) are
// written where the entries are: in the AI memory area's database (DB 4
// in the AI platform's layout), not the cache area's. A tag must sit
// beside the entries it lists, and the AI platform puts ai:rag:* and
// ai:response:* in DB 4. Schema places them there; a registry that
// composes aimemory's Schema composes cache's too.
var cacheTagsHere = []keys.Placement{
	{Template: "cache:tag:{tag_name}", Area: keys.AIMemory},
	{Template: "cache:tag-gen:{tag_name}", Area: keys.AIMemory},
	{Template: "cache:tag-dying:{tag_name}", Area: keys.AIMemory},
}

// convKeys are the templates of a conversation's keys, in the order the
// scripts take them.
var convKeys = []*keys.Template{convKey, metaKey, reqsKey, evictedKey}

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace. It places cache's tag keys in the AI memory area too
// (its caches' tags sit beside their entries), so compose it with
// cache.Schema().
func Schema() keys.Schema {
	return keys.Schema{
		AlsoIn:    cacheTagsHere,
		Templates: []*keys.Template{convKey, metaKey, reqsKey, evictedKey, userKey, indexKey, ragKey, ragMetaKey, responseKey, responseMetaKey},
		Decoders:  decoders(),
	}
}
