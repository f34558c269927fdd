// Package ratelimit limits request rates per identifier (API key, client
// IP, user) in Redis: fixed window, sliding log, sliding window counter and
// GCRA, alone or combined in a Policy that is checked and consumed
// atomically, with per-API-key runtime config, blocks, waiting, refunds,
// an in-process deny cache, a degraded mode for outages and net/http
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
//   - One round trip per operation (a check is one Lua script on server
//     time); checks made at once share pipelines (WithPipelining).
//   - All or nothing: a request is counted by every rule of the Policy only
//     if all admit it; concurrent requests never over-admit.
//   - Cluster-safe: every key of an identifier has it as its hash tag, so
//     one script touches one slot; identifiers spread over the slots.
//   - Retries: a resent check of a policy with a Sliding rule reports its
//     first outcome; otherwise it may count twice: stricter, never looser.
//   - Bounded memory: every key but the config hash has a TTL set in the
//     same script; a TTL is never shortened on a key another limiter shares.
//   - Errors before writes: bad input or a policy that cannot work is
//     ErrInvalid before anything is sent.
//   - Corruption is named: a key holding what this package does not write
//     is keys.ErrCorrupt naming it; nothing is written.
//   - Outages are not outcomes: a network failure or timeout is an error,
//     never a refusal or an admission (unless WithDegradedMode).
//   - Failover: a failover can forget the last admissions, so "never
//     over-admit" holds between failovers; there is no durability option.
//   - Deadlines: every call honours its context; New refuses a client
//     without ContextTimeoutEnabled.
//
// # Keys
//
//	Key pattern                                           Type     TTL                                                                           Purpose
//	rate_limit:{{identifier}}                             ZSET     longest Sliding period of the policy, + 1 ms                                  sliding log WithRateLimitKey: member per admitted request, score = Unix ms (rounded up)
//	ratelimit:adjust:{{identifier}}:{request_id}          STRING   3 minutes (longer than go-redis resends a command)                            marks a Refund or Penalize as done; value: the cost it moved
//	ratelimit:api:{{api_key_id}}:{window}                 STRING   window duration                                                               FixedWindow counter; window = minute, hour, day, ...
//	ratelimit:block:{{identifier}}                        STRING   the block's duration (at most 366 days)                                       present while the identifier is blocked in every limiter of the namespace; value: the request ID of the Block that set it ("auto" for WithAutoBlock)
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
// {window} is "second", "minute", "hour" or "day" for those periods, else
// the period in its largest whole unit ("15m", "1500ms"). With
// keys.Namespace.NoHashTags (and WithWindowlessLogKey or
// WithRateLimitKey for sliding logs) the keys are those of the
// home-automation backend's rate limits (with its ha: prefix as the
// keys.Namespace) and the AI platform's (docs/home-automation.md,
// docs/ai-platform.md), on a standalone server only.
//
// The long form (every guarantee in full, the algorithms, shared state,
// retries, blocks, the deny cache, degraded mode, failover figures, how
// the reference layouts map) is
// https://github.com/redschema/redschema/blob/main/docs/ratelimit.md.
package ratelimit
