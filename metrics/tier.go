package metrics

import "time"

// Tier is a rollup granularity.
type Tier int

// The rollup tiers: closed minute, hour and day (UTC) buckets.
const (
	Minute Tier = iota
	Hour
	Day
	nTiers
)

var tierNames = [nTiers]string{"minute", "hour", "day"}

// String returns "minute", "hour" or "day".
func (t Tier) String() string {
	if t >= 0 && t < nTiers {
		return tierNames[t]
	}
	return "tier(?)"
}

// Duration returns the length of the tier's buckets.
func (t Tier) Duration() time.Duration {
	switch t {
	case Hour:
		return time.Hour
	case Day:
		return 24 * time.Hour
	}
	return time.Minute
}
