// Package cache is a typed read-through cache on Redis for seed 001's API
// cache: one load across all processes on a miss, early refresh, stale
// serving, negative caching, tags, batched hit counts, an optional local
// tier, and net/http middleware with HTTP caching semantics.
//
//	files, err := cache.New[[]File](rdb, cache.WithPolicy(cache.SeedPolicy()), cache.WithGrace(time.Minute))
//	...
//	list, err := files.Get(ctx, cache.NewKey("/api/v1/files/list", "GET", r.URL.Query()),
//		func(ctx context.Context) ([]File, error) { return db.ListFiles(ctx) },
//		cache.Tags("files"))
//	...
//	_, err = files.InvalidateTag(ctx, "files") // after a write
//
// # Guarantees
//
//   - One round trip per hit, and no script: four plain reads on the
//     entry's slot (value and metadata share its hash tag), GET and PTTL
//     of the value, HGET of the metadata's hint and its PTTL, in one
//     pipeline shared with concurrent reads (WithPipelining; a script
//     would cost Redis several times more). A cached not-found is a hit
//     too. No write on the read path: hits are counted in memory and
//     added to the "hits" field in one pipeline per flush (WithHitFlush).
//     A local-tier hit costs none.
//     The four reads are not one atomic step: a write that lands between
//     them gives the value as it was at the GET (with the newer write's
//     freshness) or a miss, which the lease script settles atomically,
//     never a false corruption report. A read that fails (a slot
//     migration, a failover, a network error) is made again by the read
//     script, retried until the deadline.
//   - Single loading: the callers of one process share one load
//     (golang.org/x/sync/singleflight) and across processes a lease in the
//     entry's metadata (taken by one script, with server time) lets one
//     load: M processes × N goroutines missing one key call the loader
//     once. The others wait, woken by a message on the events channel
//     (polling at most every second meanwhile) and read the value when it
//     lands. The loader renews its lease every third of WithLease; if its
//     process dies, one waiter takes over when the lease runs out. A
//     write-back checks the lease in Lua, so a load that lost its lease
//     (taken over, or an entry Set, Deleted or invalidated meanwhile) never
//     overwrites what replaced it.
//   - Loader errors are never cached; ErrNotFound is, with
//     WithNegativeTTL. WithStaleOnError serves a value still within its
//     grace instead of the error.
//   - Early refresh (XFetch, Vattani et al., VLDB 2015): each entry's
//     metadata records its grace and how long its load took (hint,
//     "{grace_ms}:{delta_ms}"); its freshness left is the value's PTTL
//     less the grace (the server's clock, never the application's, and
//     no clock read at all when it is written), and a hit refreshes it in
//     the background with probability exp(-left/(β·delta)), so a hot key
//     is reloaded before it expires and never misses. Within its grace
//     (WithGrace, Rule.Grace) a stale value is served while one
//     background refresh, one across all instances through the lease,
//     replaces it.
//   - Tags: an entry's tags are written in the same pipeline as the entry.
//     A tag is a sorted set of entry keys scored by their expiry: it
//     expires with its longest-lived member and drops expired members as
//     it grows, so it neither outlives its members nor loses a live one.
//     InvalidateTag gives the tag a new generation and renames it to its
//     dying set (one O(1) script on the tag's slot), then drains the dying
//     set in batches of ZRANGE, UNLINKs and ZREM of at most 512 members,
//     split per node on a cluster: no command blocks Redis (100,000
//     entries: 0.4 s, no command of 10 ms or more). A load that started
//     before the invalidation sees the new generation when it writes back
//     and takes its write back; an invalidation that stops midway is
//     finished by the next one of the tag.
//   - Idempotent under retry: go-redis resends a command whose reply was
//     lost. Leases, write-backs, Sets and hit flushes carry an ID the
//     scripts recognise (a replay reports the first outcome and counts
//     nothing twice); deletes, tag records and generations are idempotent.
//   - Everything written has a TTL: entries and metadata (freshness +
//     grace), a lease (its lease), tags (their longest member), tag
//     generations (an hour). Inputs are bounded (MaxTTL, MaxLease,
//     MaxLoadTimeout, MaxValueSize, MaxTags, MaxBeta, MaxLocalEntries) and
//     checked before any I/O.
//   - Bad data heals: an entry whose value does not decode, whose
//     metadata does not parse, or that holds another type is reported to
//     the error hook (an error matching keys.ErrCorrupt naming the key)
//     and reloaded; the reload overwrites it.
//   - Errors: ErrNotFound, ErrInvalid (and keys.ErrInvalidKey for a bad
//     key segment), ErrClosed, keys.ErrCorrupt for a tag or generation key
//     of another type; a network failure, a timeout or a cluster error is
//     returned as such, never as ErrNotFound. Every error names the
//     operation and the key; redis.Nil never escapes.
//   - Deadlines: create the client with ContextTimeoutEnabled: true (New
//     refuses one without). A caller whose context ends stops waiting; the
//     load goes on for the others, bounded by WithLoadTimeout.
//
// # Keys
//
//	Key pattern                                               Type     TTL                                                                         Purpose
//	cache:api:{endpoint}:{method}:{{params_hash}}             STRING   1m (the endpoint's policy TTL (seed: 30s to 86400s) plus the grace window)  cached value (the codec's bytes, JSON by default); params_hash hashes method, endpoint and parameters
//	cache:meta:cache:api:{endpoint}:{method}:{{params_hash}}  HASH     1m (same as the entry; a lease alone lives for the lease)                   entry metadata: created_at, hits, size_bytes (seed) and hint (grace and load time, or a marker's kind), wid, lease
//	cache:tag-dying:user:{{user_id}}                          ZSET     the tag's, kept while an invalidation drains it                             members of tag user:{user_id} being invalidated
//	cache:tag-dying:{{tag_name}}                              ZSET     the tag's, kept while an invalidation drains it                             members of a tag being invalidated (renamed from the tag, drained in batches)
//	cache:tag-gen:user:{{user_id}}                            STRING   1h (from the tag's last invalidation; outlives any load)                    generation of tag user:{user_id}
//	cache:tag-gen:{{tag_name}}                                STRING   1h (from the tag's last invalidation; outlives any load)                    tag generation (opaque ID of the last InvalidateTag); a load that saw another one is not stored
//	cache:tag:user:{{user_id}}                                ZSET     its longest-lived member's expiry                                           tag user:{user_id}: one user's entry keys -> expiry (Unix ms), expired ones pruned
//	cache:tag:{{tag_name}}                                    ZSET     its longest-lived member's expiry                                           tag: entry key -> its expiry (Unix ms); the entries to invalidate together, expired ones pruned
//	cache:events                                              CHANNEL  -                                                                           invalidations for local tiers and wake-ups for waiting loaders: "<kind> <origin> <key or tag>"
//
// # Compatibility with existing layouts
//
// Keys and values follow seed 001 §4 (database 1, API cache), with these
// changes:
//
//   - cache:api:{endpoint}:{method}:{params_hash} holds the value's bytes
//     (JSON by default) with the endpoint's TTL, as the seed says; the TTL
//     table is SeedPolicy. {params_hash} is the key's hash tag and hashes
//     the method and endpoint with the parameters (Key.ParamsHash), so that
//     entries spread over a cluster; the seed does not say how it hashes.
//     keys.Namespace.NoHashTags gives the seed's bytes on a standalone
//     server.
//   - cache:meta:{cache_key} is cache:meta: followed by the entry's key,
//     so it shares the entry's hash tag. It keeps the seed's created_at
//     (RFC 3339, the writing process's clock: informational, no decision
//     reads it), hits and size_bytes and adds hint ("{grace_ms}:{delta_ms}",
//     or a marker's kind, neg or pass: what a hit reads besides the
//     value, in one field) and wid (and, while a load runs, lease and
//     waiters; after a hit flush, hflush). Hits are added in batches, not
//     on every read. Metadata written by earlier versions of this package
//     (fresh_until_ms, delta_ms, state, no hint) is read by the read
//     script, one more round trip per hit, until its entry is rewritten;
//     a value with no metadata at all (written by another application
//     with the seed's layout) is fresh for its TTL.
//   - cache:tag:{tag_name} is a sorted set scored by each member's expiry
//     instead of a plain set without TTL: the seed's set grows forever
//     (expired entries are never removed from it) and cannot tell a live
//     member from a dead one without racing with reloads. Tags named
//     "user:{id}" live at cache:tag:user:{user_id}, byte-identical to the
//     seed's example.
//   - New keys: cache:tag-gen:{tag_name} (and cache:tag-gen:user:{user_id}),
//     the tag's generation, which makes invalidation safe against loads in
//     flight; cache:tag-dying:{tag_name} (and :user:{user_id}), a tag
//     being invalidated, so that an invalidation never races with new
//     members and resumes after a crash; the channel cache:events.
//
// # Layouts and other packages
//
// Store is the byte-level machinery; Cache is its typed face for seed
// 001's layout. Another package reuses the machinery for keys it owns by
// registering a STRING pattern and a HASH pattern with the same
// placeholders and hash tag (say ai:rag:query:{query_hash} and
// ai:rag:meta:{query_hash}) and building a Store over them:
//
//	s, err := cache.NewStore(rdb, cache.Layout{Value: ragKey, Meta: ragMetaKey}, cache.WithNamespace(ns))
//	ref, err := s.Ref(queryHash)
//	res, err := s.Fetch(ctx, ref, func(ctx context.Context) ([]byte, error) { ... }, cache.TTL(30*time.Minute))
//
// Fetch, FetchMany, Set, Delete and InvalidateTag work on any layout.
//
// # HTTP
//
// Middleware serves a Cache of Response: GET and HEAD by path, canonical
// query, WithVary headers and WithUser ID; only cacheable responses are
// stored (never a 5xx, never a Set-Cookie); ETag and If-None-Match give
// 304; Cache-Control: max-age comes from the policy; Cache-Status (RFC
// 9211) says hit, miss or stale; a request's "Cache-Control: no-cache"
// reloads the entry; per-user entries are tagged user:{id}.
//
// # Local tier
//
// WithLocal keeps recent values in process (bounded, LRU) for at most a
// max age and never past their freshness in Redis. Set, Delete and
// InvalidateTag publish on cache:events, and every instance's local tier
// drops what changed: a local value is stale at most for the message's
// delivery, or the max age when a message is lost (pub/sub is at most
// once; a failover or a reconnection can lose messages). Off by default.
//
// # Failover
//
// Redis replicates asynchronously: a failover can lose recent entries
// (misses that reload), a lease (a second process may load too; its
// write-back and the first's both pass, the last one wins), or an
// invalidation's last deletions (call InvalidateTag again after a
// failover if it matters).
package cache
