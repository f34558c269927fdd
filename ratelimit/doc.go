// Package ratelimit limits request rates per identifier (API key, client
// IP, user) in Redis: fixed window, sliding log, sliding window counter and
// GCRA, alone or combined in a Policy that is checked and consumed
// atomically, with per-API-key runtime config, blocks and net/http
// middleware.
//
//	l, err := ratelimit.New(rdb, ratelimit.Policy{
//		{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 60, Period: time.Minute, Burst: 10}},
//		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(1000)},
//		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(10000)},
//	}, ratelimit.WithRuntimeConfig())
//	...
//	res, err := l.Allow(ctx, apiKeyID)
//	if err != nil {
//		return err // Redis down, a timeout, corrupt state: not a decision
//	}
//	if !res.Allowed {
//		return tooMany(res.RetryAfter)
//	}
//
// # Guarantees
//
//   - One round trip per operation. Allow, AllowN and Peek run one Lua
//     script (EVALSHA, falling back to EVAL) that reads the server's TIME,
//     so application clocks never matter; Block, Unblock, SetConfig and
//     DeleteConfig are one script each, Refund, Penalize and Reset one
//     script each, Config one HMGET; a refusal from the deny
//     cache (WithDenyCache) none. The
//     policy is compiled into the limiter's scripts in New, so a call sends
//     only keys, the cost and a nonce. A limiter with one rule and no
//     runtime config runs a lean script for its algorithm for Allow and
//     AllowN, with the same results as the general one.
//   - Atomic and all or nothing. A Policy's rules are checked first and the
//     request is counted by all of them only if all admit it: a request
//     refused by the daily limit consumes nothing from the minute limit.
//     200 goroutines on one identifier never over-admit, on a single server
//     or a Redis Cluster, with or without auto-pipelining (a failover can
//     forget recent admissions: see Failover). A refusal
//     consumes nothing, but may repair: a FixedWindow counter found without
//     a TTL gets its TTL back, and a sliding log drops entries that have
//     left the window. Peek writes nothing at all.
//   - Cluster-safe. Every key of one identifier carries the identifier as
//     its hash tag (rate_limit:{42}, ratelimit:api:{42}:minute,
//     ratelimit:config:{42}), so one script can touch them all on a Redis
//     Cluster; identifiers still spread over the slots.
//   - Retries. go-redis resends a command whose reply was lost, and a whole
//     pipeline when its connection broke. A resent check of a policy with a
//     Sliding rule, a resent Block and a resent SetConfig report the first
//     call's outcome and change nothing more; a resent check of FixedWindow,
//     SlidingCounter or GCRA state may count the request twice, which makes
//     the limiter stricter, never looser (see Retries below for why).
//   - Bounded memory. Every key written has a TTL set in the same script,
//     except the config hash, which is operator data. A TTL is never
//     shortened on a key another limiter may share. A sliding log holds at
//     most the requests admitted within its window (a Sliding rule's Rate
//     is at most 100 000; use SlidingCounter above that). Blocks last at
//     most MaxBlock (one year).
//   - Errors before writes. Bad input is ErrInvalid, found before anything
//     is sent: a nil client, or a go-redis client without
//     ContextTimeoutEnabled; a policy that cannot work (rates and bursts in
//     1..2^40, periods of whole milliseconds in 1ms..366 days, a GCRA
//     interval Period/Rate of at least 10µs, at most 16 rules); a cost
//     below 1 or above what a rule can ever admit; a Block outside
//     1ms..MaxBlock; a Config value out of range; WithPipelining outside
//     0..MaxPipelines; an empty or oversize identifier or endpoint (also
//     keys.ErrInvalidKey).
//   - Corruption is named. A key holding what this package does not write
//     (another type; a number outside the exact format written, digits
//     only, or outside its range: a count above 2^40, a counter TTL longer
//     than its window, a GCRA time further ahead than its key's TTL, a
//     SlidingCounter bucket ahead of server time, a config field above what
//     New allows, a block key holding anything but a request ID or a TTL
//     above MaxBlock) is a keys.ErrCorrupt error naming that key; nothing is
//     written. A sliding-log entry scored in the future is reported by Peek
//     and by every check that finds the log full (until then it takes one
//     request's place: finding it sooner would cost every check a command).
//   - Outages are not outcomes. A network failure, a timeout or a cluster
//     error is returned as an error, never as a refusal or an admission.
//     Every error names the operation and the key; redis.Nil never escapes.
//   - Deadlines. Every call honours its context; New refuses a go-redis
//     client without ContextTimeoutEnabled, which would ignore deadlines
//     on a hung server.
//
// # Keys
//
//	Key pattern                                           Type     TTL                                                                           Purpose
//	rate_limit:{{identifier}}                             ZSET     longest Sliding period of the policy, + 1 ms                                  sliding log WithRateLimitKey: member per admitted request, score = Unix ms (rounded up)
//	ratelimit:adjust:{{identifier}}:{request_id}          STRING   1 minute (longer than go-redis resends a command)                             marks a Refund or Penalize as done; value: the cost it moved
//	ratelimit:api:{{api_key_id}}:{window}                 STRING   window duration                                                               FixedWindow counter; window = minute, hour, day, ...
//	ratelimit:block:{{identifier}}                        STRING   the block's duration (at most MaxBlock, 366 days)                             present while the identifier is blocked in every limiter of the namespace; value: the request ID of the Block that set it ("auto" for WithAutoBlock)
//	ratelimit:config:{{api_key_id}}                       HASH     none (operator-managed, one small hash per API key; DeleteConfig removes it)  per-key overrides: per_minute, per_hour, per_day, burst
//	ratelimit:gcra:{{identifier}}:{endpoint}:{window}     STRING   until the bucket is full again, at most burst × period / rate                 GCRA theoretical arrival time per endpoint, µs since the epoch
//	ratelimit:gcra:{{identifier}}:{window}                STRING   until the bucket is full again, at most burst × period / rate                 GCRA theoretical arrival time, µs since the epoch
//	ratelimit:instances                                   ZSET     3 s after the last heartbeat (each live instance beats every second)          instance ID per live Limiter WithDegradedMode, scored by its last heartbeat (server ms); degraded mode divides the rate by their count
//	ratelimit:ip:{{ip_address}}:{endpoint}:{window}       STRING   window duration                                                               FixedWindow counter per endpoint
//	ratelimit:refusals:{{identifier}}                     STRING   WithAutoBlock's window, from the window's first refusal                       refusals counted toward WithAutoBlock; deleted when the block is set
//	ratelimit:sliding:{{identifier}}:{endpoint}           ZSET     longest Sliding period of the policy, + 1 ms                                  sliding log per endpoint WithWindowlessLogKey: member per admitted request, score = Unix ms (rounded up)
//	ratelimit:sliding:{{identifier}}:{endpoint}:{window}  ZSET     window (longest Sliding period of the policy), + 1 ms                         sliding log per endpoint and window: member per admitted request, score = Unix ms (rounded up)
//	ratelimit:swc:{{identifier}}:{endpoint}:{window}      STRING   at most 2 × window                                                            SlidingCounter state per endpoint "bucket:count:previous"
//	ratelimit:swc:{{identifier}}:{window}                 STRING   at most 2 × window                                                            SlidingCounter state "bucket:count:previous"
//	sliding_limit:{{identifier}}                          ZSET     longest Sliding period of the policy, + 1 ms                                  sliding log WithWindowlessLogKey: member per admitted request, score = Unix ms (rounded up)
//	sliding_limit:{{identifier}}:{window}                 ZSET     window (longest Sliding period of the policy), + 1 ms                         sliding log per window: member per admitted request, score = Unix ms (rounded up)
//	ratelimit:events                                      CHANNEL  -                                                                             identifiers whose deny-cache entries every instance drops at once: payload = the identifier
//
// {window} is "second", "minute", "hour" or "day" for those periods (seed
// 001's names), else the period in its largest whole unit ("15m", "1500ms").
//
// # Compatibility with existing layouts
//
// Keys and values follow seed 000 §3 (rate_limit:{identifier},
// sliding_limit:{identifier}) and seed 001 §8
// (ratelimit:api:{api_key_id}:{window},
// ratelimit:ip:{ip_address}:{endpoint}:{window},
// ratelimit:config:{api_key_id}, ratelimit:sliding:{identifier}:{endpoint}),
// so an application written for those documents and a limiter of this
// package can share their state. The differences, and why:
//
//   - Sliding-log keys carry a window segment by default:
//     sliding_limit:{identifier}:{window} and
//     ratelimit:sliding:{identifier}:{endpoint}:{window}. The seeds' keys
//     have none, so two limiters of one identifier with different windows
//     (a per-minute and a per-hour limit, say) would share one log: the
//     minute limiter trims every entry older than a minute and sets a
//     minute's TTL, which wipes the hourly limiter's log, and the hourly
//     limit then admits without bound. With the window in the key each
//     window keeps its own log. WithWindowlessLogKey (or WithRateLimitKey)
//     gives the seeds' exact keys, for a deployment with one Sliding window
//     per identifier, for instance one shared with a seed application;
//     such a key's TTL is only ever lengthened.
//   - Seed 000's "fixed window" rate_limit:{identifier} is a sorted set of
//     timestamps, so it was a sliding log, and its members were the
//     timestamp: two requests in one millisecond collapsed into one member
//     and were under-counted. It is kept, opt-in (WithRateLimitKey), as an
//     exact sliding log with members unique per request; FixedWindow uses
//     seed 001's string counters.
//   - Sliding-log scores are the seeds' Unix milliseconds (Date.now()),
//     written as integers and rounded up, so that a request stays in the
//     window at least a full period. Members are "<nonce>-<n>": the nonce
//     is 72 random bits per Limiter and a per-call counter, so members are
//     unique even within one millisecond and across processes, stay short
//     (the time is in the score), and name their request (see Retries). A
//     seed application writing Date.now() scores into the same log is
//     counted alike, and a seed reader's ZCOUNT over the last window counts
//     ours.
//   - Both seeds check, then act, from the application (ZCARD then ZADD,
//     GET then INCR) on application clocks; here each check is one script
//     on server time, so concurrent requests never over-admit.
//   - Seed 001 gives no semantics for burst: here it is the GCRA bucket
//     size, and the config fields override matching rules at request time,
//     read in the same script (absent fields keep the policy's values).
//     Config values are the seed's decimal strings; a value New would
//     refuse, written by other means, is reported as corrupt.
//   - Hash tags around the identifier (the one permitted byte difference;
//     keys.Namespace.NoHashTags restores the seeds' bytes on a standalone
//     server). IPv6 addresses keep their ':' escaped as %3A.
//   - New keys for what the seeds lack: the sliding window counter, GCRA
//     state, and blocks.
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
// WithWindowlessLogKey or WithRateLimitKey the key has no window, and only
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
// # Retries
//
// go-redis resends a command whose reply was lost after the server ran it
// (up to the client's MaxRetries, 3 by default), and resends a whole
// pipeline when its connection broke: with auto-pipelining, every check of
// the batch. So one call can run twice on the server. What that does:
//
//   - Sliding logs are exact. Each check carries a nonce, made before the
//     first send and sent unchanged on every resend, that names its log
//     entries. A resend that finds its first entry reports the call
//     admitted again, with the counts as they stand, and counts nothing.
//     The lean script pays nothing for it: it logs the request first
//     (ZADD NX, whose reply tells a resend apart) and takes it back when
//     the log is then over the limit, instead of counting first; the
//     general script reads one ZSCORE. This holds for every policy with a
//     Sliding rule, whatever its other rules (all or nothing: the log
//     entry exists exactly when every rule counted the request).
//   - A refusal writes nothing, so a resent refusal is decided afresh, as
//     a request made at the time of the resend.
//   - FixedWindow, SlidingCounter and GCRA (without a Sliding rule in the
//     policy) count a resent check again. Their state is one number that
//     every request of the identifier changes (for FixedWindow, a counter
//     that seed 001's applications INCR themselves, so it can hold nothing
//     else); telling a resend from a new request would need a record of
//     every admitted request for as long as a resend can come (the
//     client's retry and timeout budget: seconds), per identifier, which
//     costs memory and Redis commands in proportion to the identifier's
//     request rate: that record is a sliding log. Remembering only the last
//     request would be cheap, but it misses exactly the resends that
//     matter: those of a busy identifier, and of a resent pipeline, which
//     carries many checks of the same identifier. So a resent check of
//     these makes the limiter stricter, never looser: the request is
//     counted twice, or, when a second count would go over the limit, the
//     resend is refused (counting nothing more) and the call reports a
//     refusal for a request that was counted once. Nothing is ever
//     admitted that the limit does not allow. Use a Sliding rule where a lost reply must never cost a
//     client a unit, or a client with MaxRetries: -1, which returns a lost
//     reply as an error (which the middleware answers as WithUnavailable
//     says).
//   - Block writes the call's request ID as the block key's value: a
//     resend finds it and changes nothing, so the block ends d after the
//     first send reached the server.
//   - Refund and Penalize keep their request ID for a minute
//     (ratelimit:adjust:{id}:{request}): a resend finds it and changes
//     nothing more. WithAutoBlock counts a resent refusal again: stricter,
//     never looser.
//   - SetConfig writes the same fields again, DeleteConfig, Unblock and
//     Reset delete again: the same outcome, and the state of the same call made
//     a moment later (a resent Reset also deletes what a check wrote in
//     between; a resent SetConfig wins over one made in between).
//
// # Failover
//
// Replication is asynchronous: a failover (a master that dies, or CLUSTER
// FAILOVER TAKEOVER, which promotes a replica without waiting for it to
// catch up) loses the writes the replica had not received, and those the
// old master acknowledged until it learned it was demoted. For a limiter
// those are the last admissions counted (sliding-log entries, counters,
// GCRA arrival times), refunds and penalties, Block and SetConfig, and an
// auto-block's refusal count: each forgotten admission lets one more
// request through later in its window, so "never over-admit" holds only
// between failovers. Measured by the chaos tier (internal/chaos,
// TestTakeoverLosesNoDurableJob: 4 CLUSTER FAILOVER TAKEOVERs of one shard
// in about 40 s, two callers on a new identifier of that shard every
// second): the server had forgotten 19 of 31,021 admissions, on 4 of 31
// identifiers, about 5 on each identifier a takeover hit (8 on 3 of 25 in
// a second run); issue 21 saw 5-11 over-admissions per identifier. The
// limiter offers no durability option: waiting for a replica on every
// request would double the cost of the check that guards every request,
// for a bound that a failover loosens by a handful. A Block that must
// hold can be sent again after a failover.
//
// # Auto-pipelining
//
// A Limiter keeps at most DefaultPipelines round trips in flight
// (WithPipelining changes it, 0 turns it off); checks made by other
// goroutines meanwhile wait and go out together, as one pipeline. Each
// check is still its own atomic script with its own reply; only the
// network reads and writes are shared, which under load cost the client
// and Redis more than the scripts do (see bench/RESULTS.md). A check made
// while none is in flight is sent at once, alone, so a lone caller sees no
// difference. go-redis hooks see the shared pipelines.
//
// # Blocks
//
// Block refuses an identifier in every limiter of the namespace, so every
// check reads the identifier's block key: one Redis command per check (the
// peers' libraries have no such feature). A limiter created WithoutBlocks
// skips it (and ignores blocks). Unblock lifts a block early and keeps the
// counters; Reset lifts it and clears them.
//
// # Waiting, reservations, refunds, penalties
//
// Wait blocks until a request fits, checking again after each refusal's
// RetryAfter, and gives up at once (ErrLimited) when the context's
// deadline would pass first. Reserve is AllowN that can be taken back:
// Reservation.Cancel gives exactly its units back (for a request that
// failed). Refund gives units back to every rule (never below empty);
// Penalize takes more, past the limit (a failed login that should weigh
// more than a request). Both are one script that remembers its request ID
// for a minute (ratelimit:adjust:{id}:{request}), so a resend after a lost
// reply changes nothing more.
//
// WithAutoBlock blocks an identifier after n refusals within a window, in
// the script that refuses the n-th (one round trip, atomic: under many
// concurrent refused requests the block is set once). WithShadow admits
// everything and marks what the policy would refuse (Result.Shadowed);
// WithDecisionHook sees every decision, for metrics.
//
// # Deny cache
//
// WithDenyCache(maxHold) refuses, in process, an identifier that Redis
// refused, until the refusal's RetryAfter (at most maxHold): a flood from
// one key costs Redis about one check per RetryAfter per instance instead
// of one per request (bench/RESULTS.md, the flood row). It only ever
// refuses what Redis refused, for requests of at least the refused cost,
// counting the wait from when the refused check was sent, so it never
// admits what Redis would refuse and never refuses after Redis would
// admit, as long as nothing gives capacity back. What gives capacity back
// (Reset, Block, Unblock, Refund, SetConfig, DeleteConfig) publishes the
// identifier (for a config, the API key ID) on ratelimit:events in
// the same script, and every limiter WithDenyCache of the namespace drops
// it on receipt. The window is pub/sub delivery (from the script to the
// message's arrival; under a millisecond on one host, tested on a single
// server and a cluster), and a message lost to a reconnect leaves the
// entry until its RetryAfter or maxHold.
//
// # Degraded mode
//
// By default an outage is an error (the middleware then fails closed or
// open, as WithUnavailable says). WithDegradedMode(onChange) keeps
// deciding instead: after a check fails with a network error, a timeout
// or a cluster error, the limiter decides in process (Result.Local) at
// each rule's rate divided by the number of live instances, which every
// such limiter announces with a one-second heartbeat in
// ratelimit:instances (server time; gone after 3 s without one). It
// probes Redis every 200 ms and goes back at the first answer; onChange
// hears both switches. Together the instances admit about the policy's
// rate, divided evenly between them; each switch starts the local limits
// full. Tested through a stalling proxy on a single server and a cluster.
//
// # Middleware
//
// Middleware keys requests by ClientIP (proxy headers only from trusted
// proxies; IPv6 clients by their /64 network, since one subscriber can use
// any address in it: ClientIPPrefix picks another length), Header (an API
// key, keyed by HashID, a SHA-256 of the value, so secrets never reach key
// names, errors or logs; authenticate before limiting on it), or any
// KeyFunc (WithKey); sets RateLimit-Policy, RateLimit, X-RateLimit-* and
// Retry-After; and fails closed (503) when Redis cannot answer, unless
// WithUnavailable(FailOpen) says to serve unlimited.
package ratelimit
