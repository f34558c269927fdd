// Package ratelimit limits request rates per identifier (API key, client
// IP, user) in Redis: fixed window, sliding log, sliding window counter and
// GCRA, alone or combined in a multi-limit Policy that is checked and
// consumed atomically, with per-API-key runtime config, blocking, and
// net/http middleware.
//
//	l, err := ratelimit.New(rdb, ratelimit.Policy{
//		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 60, Period: time.Minute, Burst: 10}},
//		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(1000)},
//		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(10000)},
//	}, ratelimit.WithRuntimeConfig())
//	res, err := l.Allow(ctx, apiKeyID)
//
// # Guarantees
//
//   - One round trip per operation. Allow, AllowN and Peek run one Lua
//     script (EVALSHA, falling back to EVAL), which reads the server's TIME,
//     so application clocks never matter; Reset is one DEL, Block one
//     script (PTTL, SET PX), SetConfig one MULTI/EXEC. The limiter's policy is compiled into its
//     script (each distinct policy is one cached script on the server), so a
//     call sends only the keys, the cost and a nonce. A limiter with one
//     rule and no runtime config runs, for Allow and AllowN, a lean script
//     for its algorithm (single.lua + fixed.lua, sliding.lua, swc.lua or
//     gcra.lua) with the same results as the general one: no rule loop, and
//     two to five Redis commands besides the block check (FixedWindow:
//     INCRBY and PTTL, no TIME; GCRA and SlidingCounter: TIME, GET, SET).
//   - Auto-pipelining. A Limiter keeps at most DefaultPipelines round
//     trips in flight (WithPipelining changes it, 0 turns it off); checks
//     made by other goroutines meanwhile wait and go out together, as one
//     pipeline. Each check is still its own atomic script with its own
//     reply; only the network reads and writes are shared, which under
//     load cost the client and Redis more than the scripts do (see
//     bench/RESULTS.md for what it is worth against the peers). A check
//     made while none is in flight is sent at once, alone, so a lone
//     caller sees no difference. go-redis hooks see the shared pipelines.
//   - Blocks. Block refuses an identifier in every limiter of the namespace,
//     so every check reads the identifier's block key: one Redis command
//     per check (the peers' libraries have no such feature). A limiter
//     created WithoutBlocks skips it (and ignores blocks); see
//     bench/RESULTS.md for what it costs.
//   - All or nothing. A Policy's rules are checked first and the request is
//     counted by all of them only if all admit it: a request refused by the
//     daily limit consumes nothing from the minute limit. A refusal
//     consumes nothing, but may write: a FixedWindow counter found without
//     a TTL gets its TTL back (a repair); a single-rule FixedWindow counts
//     first and takes the count back in the same atomic script when it
//     overshoots (no client can observe the difference); and a single-rule
//     Sliding log drops entries that have left the window. Peek writes
//     nothing at all.
//   - Cluster-safe. Every key of one identifier carries the identifier as
//     its hash tag (rate_limit:{42}, ratelimit:api:{42}:minute,
//     ratelimit:config:{42}), so one script can touch them all on a Redis
//     Cluster; identifiers still spread over the slots.
//   - Bounded memory. Every key written has a TTL set in the same script,
//     except the config hash, which is operator data; a TTL is never
//     shortened on a key another limiter may share (a log's TTL only
//     grows, a Block only lengthens). A sliding log holds the requests
//     admitted within its window by every limiter sharing it (see Shared
//     state): for one limiter at most its largest Sliding Rate, capped at
//     100 000 (use SlidingCounter above that), also when set by runtime
//     config. Blocks last at most MaxBlock (one year).
//   - Errors before writes. Zero or negative rates and periods, a burst on an
//     algorithm without one, duplicate rules (New); a cost below 1 or above
//     a rule's capacity (ErrInvalidCost); a Block outside 1ms..MaxBlock
//     (ErrInvalidDuration); runtime config values that New would refuse
//     (ErrInvalidLimit naming the field, from SetConfig, and from a check
//     when the hash was written by other means); empty or oversize
//     identifiers (keys.ErrInvalidKey). A key holding something this
//     package does not write is a keys.ErrCorrupt error naming the key,
//     never a panic: stored numbers must match the exact format written
//     (digits only: no sign, spaces, exponent, hex, "inf" or "nan"), in
//     every script alike. Redis and context errors are wrapped with %w.
//
// # Shared state
//
// Keys carry no rate, only the algorithm, the identifier, the endpoint
// (WithEndpoint) and the period, under the namespace. So two limiters (or
// two processes, or the rules of two policies) share state exactly when
// they have the same algorithm, period, endpoint and namespace: that is how
// several instances of one limiter coordinate, and how runtime config can
// change a rate without losing the count. Two such limiters with different
// rates count each other's requests; give them different endpoints or
// namespaces to keep them apart. For Sliding, a policy's Sliding rules share
// one log whose window segment is the policy's longest Sliding period, so
// logs are shared by limiters with the same longest Sliding period; with
// WithSeedSlidingKey or WithRateLimitKey the key has no window, and only
// one limiter per identifier (and endpoint) may use Sliding rules on it.
// Blocks are shared by every limiter of the namespace; the config hash by
// every limiter WithRuntimeConfig.
//
// # Algorithms
//
// FixedWindow: a counter whose window opens with the first request and
// lasts Period (its TTL); at most Rate per window, up to 2×Rate across a
// boundary. Sliding: a sorted set with one member per admitted request,
// exact over any interval of length Period; requests may be refused by the
// log but are never logged when refused. SlidingCounter: two buckets
// aligned to multiples of Period, the previous one weighted by its overlap
// with the sliding window; O(1) memory. GCRA: token bucket of Burst tokens
// refilled at Rate per Period, stored as one theoretical arrival time;
// never admits more than Burst + Rate×elapsed/Period.
//
// Result reports the binding rule (fewest remaining): Limit (Rate, or Burst
// for GCRA), Remaining, ResetAfter (until full capacity), and RetryAfter
// (until this request would fit; the longest wait among refusing rules).
//
// # Keys
//
// Seed 000 §3 and seed 001 §8 name the keys; Display shows the hash tag
// as {{…}} (written {42} in a key). Keys without a seed are new.
//
//	| Key pattern                                           | Type   | TTL                                   | Purpose |
//	|-------------------------------------------------------|--------|---------------------------------------|---------|
//	| `ratelimit:api:{{api_key_id}}:{window}`               | STRING | window duration                       | FixedWindow counter (seed 001) |
//	| `ratelimit:ip:{{ip_address}}:{endpoint}:{window}`     | STRING | window duration                       | FixedWindow counter WithEndpoint (seed 001) |
//	| `sliding_limit:{{identifier}}:{window}`               | ZSET   | window (longest Sliding period of the policy), + 1 ms | sliding log (seed 000 + window) |
//	| `sliding_limit:{{identifier}}`                        | ZSET   | longest Sliding period of the policy, + 1 ms | sliding log WithSeedSlidingKey (seed 000) |
//	| `rate_limit:{{identifier}}`                           | ZSET   | longest Sliding period of the policy, + 1 ms | sliding log WithRateLimitKey (seed 000) |
//	| `ratelimit:sliding:{{identifier}}:{endpoint}:{window}` | ZSET  | window (longest Sliding period of the policy), + 1 ms | sliding log WithEndpoint (seed 001 + window) |
//	| `ratelimit:sliding:{{identifier}}:{endpoint}`         | ZSET   | longest Sliding period of the policy, + 1 ms | sliding log WithEndpoint, WithSeedSlidingKey (seed 001) |
//	| `ratelimit:swc:{{identifier}}:{window}`               | STRING | at most 2 × window                    | SlidingCounter "bucket:count:previous" |
//	| `ratelimit:swc:{{identifier}}:{endpoint}:{window}`    | STRING | at most 2 × window                    | SlidingCounter WithEndpoint |
//	| `ratelimit:gcra:{{identifier}}:{window}`              | STRING | until full, ≤ burst × period / rate   | GCRA arrival time, µs since the epoch |
//	| `ratelimit:gcra:{{identifier}}:{endpoint}:{window}`   | STRING | until full, ≤ burst × period / rate   | GCRA WithEndpoint |
//	| `ratelimit:config:{{api_key_id}}`                     | HASH   | none (operator data, one per API key) | per_minute, per_hour, per_day, burst (seed 001) |
//	| `ratelimit:block:{{identifier}}`                      | STRING | the block's duration (≤ MaxBlock)     | Block: refuse the identifier everywhere |
//
// {window} is "second", "minute", "hour" or "day" for those periods (seed
// 001's names), else the period in its largest whole unit ("15m", "1500ms").
// Sliding-log scores are Unix milliseconds, as in the seeds (Date.now()),
// written as integers (which a small sorted set's listpack stores and
// compares as integers) and rounded up, so that a request stays in the
// window at least a full period; members are "<nonce>-<n>": the nonce is 72
// random bits per Limiter and a per-call counter, so members are unique
// even within one millisecond and across processes, and stay short (the
// time is in the score). A seed application writing Date.now() scores into
// the same log is counted alike.
//
// # What changed from the seeds
//
//   - Seed 000's "fixed window" rate_limit:{identifier} is a sorted set of
//     timestamps, so it was a sliding log, and its members were the
//     timestamp: two requests in one millisecond collapsed into one member
//     and were under-counted. It is kept, opt-in, as an exact sliding log
//     with unique members; FixedWindow uses seed 001's string counters.
//   - Both seeds do check-then-act from the application (ZCARD then ZADD,
//     GET then INCR) with application clocks; here each check is one script
//     on server time, so concurrent requests never over-admit.
//   - Seed 001 gives no semantics for burst: here it is the GCRA bucket
//     size, and its config fields override matching rules at request time,
//     read in the same script (absent fields keep the policy's values).
//   - The seeds' sliding-log keys have no window, so a minute limiter's
//     trim and TTL would wipe an hourly limiter's log on the same
//     identifier: by default the key gets a window segment
//     (sliding_limit:{id}:hour); WithSeedSlidingKey keeps the exact seed
//     key for a single limiter per identifier.
//   - Hash tags around the identifier (the one permitted byte difference;
//     keys.Namespace.NoHashTags restores the seeds' bytes on a standalone
//     server). IPv6 addresses keep their ':' escaped as %3A.
//   - New keys for what the seeds lack: the sliding window counter, GCRA
//     state, and blocks.
//
// # Middleware
//
// NewMiddleware keys requests by ClientIP (proxy headers only from trusted
// proxies; IPv6 clients by their /64 network, since one subscriber can use
// any address in it: ClientIPPrefix picks another length), Header (an API
// key, keyed by HashID, a SHA-256 of the value, so secrets never reach key
// names, errors or logs; authenticate before limiting on it), or any
// KeyFunc; sets RateLimit-Policy,
// RateLimit, X-RateLimit-* and Retry-After; and must be told what to do when
// Redis cannot answer: FailOpen (serve unlimited: availability over
// protection) or FailClosed (503: protection over availability).
package ratelimit
