package ratelimit

import (
	"math"
	"time"
)

// Never is the RetryAfter of a refusal that no wait can turn into an
// admission: the request's cost is above what a rule of the policy can
// ever admit (its Rate, or its Burst for GCRA, after any runtime config
// override). Retrying the same cost is pointless; a smaller cost, or a
// higher limit, may be admitted. It is the longest Duration, so a caller
// that compares waits treats it as "longer than any deadline".
const Never = time.Duration(math.MaxInt64)

// Result is the outcome of Allow, AllowN, AllowAtMost, Peek, Wait or
// Reserve.
//
// When a Policy has several rules, Limit, Remaining and ResetAfter describe
// the binding rule (the one with the fewest requests remaining; Rule is its
// index), and RetryAfter is the longest wait among the rules that refused.
type Result struct {
	// Allowed reports whether the request was admitted (and counted); for
	// Peek, whether it would be.
	Allowed bool
	// Limit is the binding rule's capacity: its Rate, or Burst for GCRA,
	// after any runtime config override.
	Limit int
	// Remaining is how many more unit-cost requests the binding rule would
	// admit right now.
	Remaining int
	// RetryAfter is zero when allowed (never -1); otherwise the time until
	// the same request would be admitted if nothing else happens
	// meanwhile, or Never when its cost is above what a rule can ever
	// admit.
	RetryAfter time.Duration
	// ResetAfter is the time until the binding rule is back to its full
	// capacity if nothing else happens meanwhile (zero if it already is).
	ResetAfter time.Duration
	// Rule is the index in the Policy of the binding rule.
	Rule int
	// Shadowed reports, in shadow mode (WithShadow), a request the policy
	// or a block refused and that was admitted all the same: Allowed is
	// true, and the other fields describe the refusal.
	Shadowed bool
	// Local reports a decision made in-process, without Redis: a refusal
	// from the deny cache (WithDenyCache), or any decision of degraded
	// mode (WithDegradedMode).
	Local bool
}

// us converts a script's microseconds to a Duration.
func us(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
