// Package cache is a typed read-through cache on Redis, in the AI
// platform's API cache layout: one load across all processes on a miss,
// early refresh, stale serving, negative caching, tags, batched hit
// counts, an optional local tier, and net/http middleware with HTTP
// caching semantics. Cache is the typed face; Store, the byte-level
// machinery, serves other packages' layouts too.
//
//	files, err := cache.New[[]File](rdb, cache.WithPolicy(cache.SeedPolicy()), cache.WithGrace(time.Minute))
//	...
//	list, err := files.Get(ctx, cache.NewKey("/api/v1/files/list", "GET", r.URL.Query()),
//		func(ctx context.Context) ([]File, error) { return db.ListFiles(ctx) },
//		cache.WithTags("files"))
//	...
//	_, err = files.InvalidateTag(ctx, "files") // after a write
//
// # Guarantees
//
//   - One round trip per hit, and no script (a local-tier hit: none); no
//     write on the read path (hits are counted in batches).
//   - Single loading: M processes x N goroutines missing one key call the
//     loader once; a dead loader's lease is taken over.
//   - A load that lost its lease, or began before an invalidation, never
//     overwrites what replaced it.
//   - Loader errors are never cached; ErrNotFound is, with WithNegativeTTL.
//   - Early refresh (XFetch) reloads a hot key before it expires; within
//     its grace a stale value is served while one refresh runs.
//   - Tags expire with their longest-lived member; InvalidateTag never
//     blocks Redis and is finished by the next one if it stops midway.
//   - Idempotent under retry: a resent write reports its first outcome.
//   - Everything written has a TTL; inputs are bounded and checked before
//     any I/O.
//   - Bad data heals: an entry that does not decode is reported (an error
//     matching keys.ErrCorrupt) and reloaded.
//   - A failover can lose recent entries, a lease or an invalidation's
//     last deletions.
//   - Errors: ErrNotFound, ErrInvalid, ErrClosed, keys.ErrCorrupt; a
//     network failure is returned as such, never as ErrNotFound.
//   - Deadlines: New refuses a go-redis client without
//     ContextTimeoutEnabled.
//
// # Keys
//
//	Key pattern                                               Type     TTL                                                                                               Purpose
//	cache:api:{endpoint}:{method}:{{params_hash}}             STRING   1m (the endpoint's policy TTL (30s to 86400s in the AI platform's layout) plus the grace window)  cached value (the codec's bytes, JSON by default); params_hash hashes method, endpoint and parameters
//	cache:meta:cache:api:{endpoint}:{method}:{{params_hash}}  HASH     1m (same as the entry; a lease alone lives for the lease)                                         entry metadata: created_at, hits, size_bytes (as in the AI platform's layout) and hint (grace and load time, or a marker's kind), wid, lease
//	cache:tag-dying:user:{{user_id}}                          ZSET     the tag's, kept while an invalidation drains it                                                   members of tag user:{user_id} being invalidated
//	cache:tag-dying:{{tag_name}}                              ZSET     the tag's, kept while an invalidation drains it                                                   members of a tag being invalidated (renamed from the tag, drained in batches)
//	cache:tag-gen:user:{{user_id}}                            STRING   1h (from the tag's last invalidation; outlives any load)                                          generation of tag user:{user_id}
//	cache:tag-gen:{{tag_name}}                                STRING   1h (from the tag's last invalidation; outlives any load)                                          tag generation (opaque ID of the last InvalidateTag); a load that saw another one is not stored
//	cache:tag:user:{{user_id}}                                ZSET     its longest-lived member's expiry                                                                 tag user:{user_id}: one user's entry keys -> expiry (Unix ms), expired ones pruned
//	cache:tag:{{tag_name}}                                    ZSET     its longest-lived member's expiry                                                                 tag: entry key -> its expiry (Unix ms); the entries to invalidate together, expired ones pruned
//	cache:events                                              CHANNEL  -                                                                                                 invalidations for local tiers and wake-ups for waiting loaders: "<kind> <origin> <key or tag>", newline-separated keys for a round trip of Sets
//
// The long form (hits and single loading in detail, early refresh,
// invalidation, other layouts, HTTP, the local tier, how the AI
// platform's layout maps, limits) is
// https://github.com/redschema/redschema/blob/main/docs/cache.md.
package cache
