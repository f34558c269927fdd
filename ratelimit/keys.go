package ratelimit

import "github.com/redschema/redschema/keys"

// Every key of one identifier carries the identifier as its hash tag, so all
// the keys one script touches (block, config, every rule's state) share a
// cluster slot whatever the template.
var (
	// Seed 000 §3. Its "fixed window" limiter stored a log of timestamps in
	// a sorted set; here it is an (exact) sliding log, opt-in with
	// WithRateLimitKey (no window segment: one limiter per identifier).
	rateLimitKey = keys.MustCompile(keys.Pattern{
		Template: "rate_limit:{identifier}", Type: keys.ZSet, Tag: "identifier",
		TTLNote: "longest Sliding period of the policy, + 1 ms",
		Owner:   "ratelimit", Area: keys.RateLimits, Seed: "000 §3",
		Purpose: "sliding log WithRateLimitKey: member per admitted request, score = Unix ms (rounded up)",
	})
	// Seed 000 §3: sliding log at the seed's exact key (WithWindowlessLogKey:
	// one limiter per identifier, since the key has no window).
	slidingLimitKey = keys.MustCompile(keys.Pattern{
		Template: "sliding_limit:{identifier}", Type: keys.ZSet, Tag: "identifier",
		TTLNote: "longest Sliding period of the policy, + 1 ms",
		Owner:   "ratelimit", Area: keys.RateLimits, Seed: "000 §3",
		Purpose: "sliding log WithWindowlessLogKey: member per admitted request, score = Unix ms (rounded up)",
	})
	// Seed 000 §3 plus a window segment: the default key of Sliding rules,
	// so limiters with different windows never trim each other's log.
	slidingWindowKey = keys.MustCompile(keys.Pattern{
		Template: "sliding_limit:{identifier}:{window}", Type: keys.ZSet, Tag: "identifier",
		TTLNote: "window (longest Sliding period of the policy), + 1 ms",
		Owner:   "ratelimit", Area: keys.RateLimits, Seed: "000 §3",
		Purpose: "sliding log per window: member per admitted request, score = Unix ms (rounded up)",
	})
	// Seed 001 §8: sliding log per identifier and endpoint at the seed's
	// exact key (WithEndpoint + WithWindowlessLogKey).
	slidingEndpointKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:sliding:{identifier}:{endpoint}", Type: keys.ZSet, Tag: "identifier",
		TTLNote: "longest Sliding period of the policy, + 1 ms",
		Owner:   "ratelimit", Area: keys.RateLimits, Seed: "001 §8",
		Purpose: "sliding log per endpoint WithWindowlessLogKey: member per admitted request, score = Unix ms (rounded up)",
	})
	// Seed 001 §8 plus a window segment: the default WithEndpoint log.
	slidingEndpointWindowKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:sliding:{identifier}:{endpoint}:{window}", Type: keys.ZSet, Tag: "identifier",
		TTLNote: "window (longest Sliding period of the policy), + 1 ms",
		Owner:   "ratelimit", Area: keys.RateLimits, Seed: "001 §8",
		Purpose: "sliding log per endpoint and window: member per admitted request, score = Unix ms (rounded up)",
	})
	// Seed 001 §8: fixed window counter per API key.
	apiKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:api:{api_key_id}:{window}", Type: keys.String, Tag: "api_key_id",
		TTLNote: "window duration",
		Owner:   "ratelimit", Area: keys.RateLimits, Seed: "001 §8",
		Purpose: "FixedWindow counter; window = minute, hour, day, ...",
	})
	// Seed 001 §8: fixed window counter per client address and endpoint.
	ipKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:ip:{ip_address}:{endpoint}:{window}", Type: keys.String, Tag: "ip_address",
		TTLNote: "window duration",
		Owner:   "ratelimit", Area: keys.RateLimits, Seed: "001 §8",
		Purpose: "FixedWindow counter per endpoint",
	})
	// Seed 001 §8: runtime limits of an API key.
	configKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:config:{api_key_id}", Type: keys.Hash, Tag: "api_key_id",
		Persistent: "operator-managed, one small hash per API key; DeleteConfig removes it",
		Owner:      "ratelimit", Area: keys.RateLimits, Seed: "001 §8",
		Purpose: "per-key overrides: per_minute, per_hour, per_day, burst",
	})
	// Two-bucket sliding window counter (no seed key; O(1) per identifier).
	swcKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:swc:{identifier}:{window}", Type: keys.String, Tag: "identifier",
		TTLNote: "at most 2 × window",
		Owner:   "ratelimit", Area: keys.RateLimits,
		Purpose: `SlidingCounter state "bucket:count:previous"`,
	})
	swcEndpointKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:swc:{identifier}:{endpoint}:{window}", Type: keys.String, Tag: "identifier",
		TTLNote: "at most 2 × window",
		Owner:   "ratelimit", Area: keys.RateLimits,
		Purpose: `SlidingCounter state per endpoint "bucket:count:previous"`,
	})
	// GCRA theoretical arrival time (seed 001's burst).
	gcraKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:gcra:{identifier}:{window}", Type: keys.String, Tag: "identifier",
		TTLNote: "until the bucket is full again, at most burst × period / rate",
		Owner:   "ratelimit", Area: keys.RateLimits, Seed: "001 §8",
		Purpose: "GCRA theoretical arrival time, µs since the epoch",
	})
	gcraEndpointKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:gcra:{identifier}:{endpoint}:{window}", Type: keys.String, Tag: "identifier",
		TTLNote: "until the bucket is full again, at most burst × period / rate",
		Owner:   "ratelimit", Area: keys.RateLimits, Seed: "001 §8",
		Purpose: "GCRA theoretical arrival time per endpoint, µs since the epoch",
	})
	// Block(id, d).
	blockKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:block:{identifier}", Type: keys.String, Tag: "identifier",
		TTLNote: "the block's duration (at most 366 days)",
		Owner:   "ratelimit", Area: keys.RateLimits,
		Purpose: "present while the identifier is blocked in every limiter of the namespace; value: the request ID of the Block that set it (\"auto\" for WithAutoBlock)",
	})
	// WithAutoBlock's count of recent refusals.
	refusalsKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:refusals:{identifier}", Type: keys.String, Tag: "identifier",
		TTLNote: "WithAutoBlock's window, from the window's first refusal",
		Owner:   "ratelimit", Area: keys.RateLimits,
		Purpose: "refusals counted toward WithAutoBlock; deleted when the block is set",
	})
	// Refund and Penalize remember their request IDs, so that a resend
	// changes nothing more.
	adjustKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:adjust:{identifier}:{request_id}", Type: keys.String, Tag: "identifier",
		TTLNote: "3 minutes (longer than go-redis resends a command)",
		Owner:   "ratelimit", Area: keys.RateLimits,
		Purpose: "marks a Refund or Penalize as done; value: the cost it moved",
	})
	// WithDegradedMode: the live instances of the namespace's limiters.
	instancesKey = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:instances", Type: keys.ZSet,
		TTLNote: "3 s after the last heartbeat (each live instance beats every second)",
		Owner:   "ratelimit", Area: keys.RateLimits,
		Purpose: "instance ID per live Limiter WithDegradedMode, scored by its last heartbeat (server ms); degraded mode divides the rate by their count",
	})
	// Reset, Block, Unblock, Refund, SetConfig and DeleteConfig announce
	// an identifier whose local deny-cache entries must go (WithDenyCache).
	eventsChannel = keys.MustCompile(keys.Pattern{
		Template: "ratelimit:events", Type: keys.Channel,
		Owner: "ratelimit", Area: keys.RateLimits,
		Purpose: "identifiers whose deny-cache entries every instance drops at once: payload = the identifier",
	})
)

// allTemplates lists the package's templates, for tests.
var allTemplates = []*keys.Template{
	rateLimitKey, slidingLimitKey, slidingWindowKey, slidingEndpointKey, slidingEndpointWindowKey, apiKey, ipKey, configKey,
	swcKey, swcEndpointKey, gcraKey, gcraEndpointKey, blockKey, refusalsKey, adjustKey, eventsChannel, instancesKey,
}

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	return keys.Schema{
		Templates: []*keys.Template{rateLimitKey, slidingLimitKey, slidingWindowKey, slidingEndpointKey, slidingEndpointWindowKey, apiKey, ipKey, configKey, swcKey, swcEndpointKey, gcraKey, gcraEndpointKey, blockKey, refusalsKey, adjustKey, instancesKey, eventsChannel},
		Decoders:  decoders(),
	}
}
