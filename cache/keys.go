package cache

import (
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// defaultTTL is the freshness of an entry whose endpoint no policy rule
// names (the AI platform's default, docs/ai-platform.md).
const defaultTTL = 60 * time.Second

// genTTL is how long a tag's generation outlives its last invalidation:
// longer than any load may run (maxLoadTimeout), so that a load that
// started before an invalidation always sees it when it writes back.
const genTTL = time.Hour

var (
	entryKey = keys.MustCompile(keys.Pattern{
		Template: "cache:api:{endpoint}:{method}:{params_hash}",
		Type:     keys.String,
		TTL:      defaultTTL,
		TTLNote:  "the endpoint's policy TTL (30s to 86400s in the AI platform's layout) plus the grace window",
		Tag:      "params_hash",
		Owner:    "cache",
		Area:     keys.Cache,
		Purpose:  "cached value (the codec's bytes, JSON by default); params_hash hashes method, endpoint and parameters",
		Seed:     "001 §4",
	})
	metaKey = keys.MustCompile(keys.Pattern{
		Template: "cache:meta:cache:api:{endpoint}:{method}:{params_hash}",
		Type:     keys.Hash,
		TTL:      defaultTTL,
		TTLNote:  "same as the entry; a lease alone lives for the lease",
		Tag:      "params_hash",
		Owner:    "cache",
		Area:     keys.Cache,
		Purpose:  "entry metadata: created_at, hits, size_bytes (as in the AI platform's layout) and hint (grace and load time, or a marker's kind), wid, lease",
		Seed:     "001 §4",
	})
	tagKey = keys.MustCompile(keys.Pattern{
		Template: "cache:tag:{tag_name}",
		Type:     keys.ZSet,
		TTLNote:  "its longest-lived member's expiry",
		Tag:      "tag_name",
		Owner:    "cache",
		Area:     keys.Cache,
		Purpose:  "tag: entry key -> its expiry (Unix ms); the entries to invalidate together, expired ones pruned",
		Seed:     "001 §4",
	})
	userTagKey = keys.MustCompile(keys.Pattern{
		Template: "cache:tag:user:{user_id}",
		Type:     keys.ZSet,
		TTLNote:  "its longest-lived member's expiry",
		Tag:      "user_id",
		Owner:    "cache",
		Area:     keys.Cache,
		Purpose:  "tag user:{user_id}: one user's entry keys -> expiry (Unix ms), expired ones pruned",
		Seed:     "001 §4",
	})
	tagGenKey = keys.MustCompile(keys.Pattern{
		Template: "cache:tag-gen:{tag_name}",
		Type:     keys.String,
		TTL:      genTTL,
		TTLNote:  "from the tag's last invalidation; outlives any load",
		Tag:      "tag_name",
		Owner:    "cache",
		Area:     keys.Cache,
		Purpose:  "tag generation (opaque ID of the last InvalidateTag); a load that saw another one is not stored",
	})
	userTagGenKey = keys.MustCompile(keys.Pattern{
		Template: "cache:tag-gen:user:{user_id}",
		Type:     keys.String,
		TTL:      genTTL,
		TTLNote:  "from the tag's last invalidation; outlives any load",
		Tag:      "user_id",
		Owner:    "cache",
		Area:     keys.Cache,
		Purpose:  "generation of tag user:{user_id}",
	})
	tagDyingKey = keys.MustCompile(keys.Pattern{
		Template: "cache:tag-dying:{tag_name}",
		Type:     keys.ZSet,
		TTLNote:  "the tag's, kept while an invalidation drains it",
		Tag:      "tag_name",
		Owner:    "cache",
		Area:     keys.Cache,
		Purpose:  "members of a tag being invalidated (renamed from the tag, drained in batches)",
	})
	userTagDyingKey = keys.MustCompile(keys.Pattern{
		Template: "cache:tag-dying:user:{user_id}",
		Type:     keys.ZSet,
		TTLNote:  "the tag's, kept while an invalidation drains it",
		Tag:      "user_id",
		Owner:    "cache",
		Area:     keys.Cache,
		Purpose:  "members of tag user:{user_id} being invalidated",
	})
	eventsChannel = keys.MustCompile(keys.Pattern{
		Template: "cache:events",
		Type:     keys.Channel,
		Owner:    "cache",
		Area:     keys.Cache,
		Purpose:  "invalidations for local tiers and wake-ups for waiting loaders: \"<kind> <origin> <key or tag>\", newline-separated keys for a round trip of Sets",
	})
)

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	return keys.Schema{
		Templates: []*keys.Template{entryKey, metaKey, tagKey, userTagKey, tagGenKey, userTagGenKey, tagDyingKey, userTagDyingKey, eventsChannel},
		Decoders:  decoders(),
	}
}

// own is a registry of the package's own patterns, built once: the admin
// reads ask it which of them owns a key they scanned.
var own = call.OwnPatterns(Schema)
