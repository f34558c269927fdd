package ratelimit

import (
	"fmt"
	"strconv"
	"time"
)

// Algorithm selects how a Rule counts requests. Every algorithm runs as one
// Lua script with the server's TIME, and every key it writes has a TTL.
type Algorithm uint8

// The algorithms. The zero Algorithm is invalid, so a Rule must name one.
const (
	// FixedWindow counts requests in a window that opens with the first
	// request and lasts Period (the counter's TTL): at most Rate per window.
	// Cheapest; a client can get up to 2×Rate across a window boundary.
	// Keys: ratelimit:api:{id}:{window}, or with an endpoint
	// ratelimit:ip:{ip}:{endpoint}:{window}.
	FixedWindow Algorithm = iota + 1
	// Sliding keeps a log of admitted requests in a sorted set: at most Rate
	// in any interval of length Period, exactly. Memory grows with Rate.
	// Keys: sliding_limit:{id}:{window}, or with an endpoint
	// ratelimit:sliding:{id}:{endpoint}:{window}; without the window
	// segment WithWindowlessLogKey, or rate_limit:{id} WithRateLimitKey.
	Sliding
	// SlidingCounter approximates Sliding with two fixed buckets aligned to
	// multiples of Period, weighting the previous one by how much of it still
	// overlaps the sliding window. O(1) memory; may admit slightly more or
	// less than Sliding would when traffic is uneven.
	SlidingCounter
	// GCRA is the generic cell rate algorithm, equivalent to a token bucket
	// that holds Burst tokens and refills Rate per Period: at most Burst at
	// once, and never more than Burst + Rate×elapsed/Period over any span.
	// Period/Rate must be at least 10µs (100 000 requests per second).
	GCRA
)

// String returns the algorithm's name, as used in key and header names.
func (a Algorithm) String() string {
	switch a {
	case FixedWindow:
		return "fixed"
	case Sliding:
		return "sliding"
	case SlidingCounter:
		return "swc"
	case GCRA:
		return "gcra"
	}
	return "Algorithm(" + strconv.Itoa(int(a)) + ")"
}

// Limit is a rate: Rate requests per Period. Burst is GCRA's bucket size
// (the most requests admitted at once); zero means Rate. The other
// algorithms have no burst and refuse a non-zero Burst.
//
// Rate and Burst are at most 2^40 (a Sliding rule's Rate at most 100 000,
// since its log keeps one entry per request); Period must be a whole number of milliseconds, at least 1ms
// (TTLs are set in milliseconds), and at most one year (366 days); a GCRA
// rule needs Period/Rate of at least 10µs. Runtime config (SetConfig) is
// held to the same limits.
type Limit struct {
	Rate   int
	Period time.Duration
	Burst  int
}

// PerSecond returns Rate requests per second.
func PerSecond(rate int) Limit { return Limit{Rate: rate, Period: time.Second} }

// PerMinute returns Rate requests per minute.
func PerMinute(rate int) Limit { return Limit{Rate: rate, Period: time.Minute} }

// PerHour returns Rate requests per hour.
func PerHour(rate int) Limit { return Limit{Rate: rate, Period: time.Hour} }

// PerDay returns Rate requests per 24 hours.
func PerDay(rate int) Limit { return Limit{Rate: rate, Period: 24 * time.Hour} }

// String renders the limit as "10/minute" or "10/minute burst 20".
func (l Limit) String() string {
	s := strconv.Itoa(l.Rate) + "/" + windowName(l.Period)
	if l.Burst != 0 {
		s += " burst " + strconv.Itoa(l.Burst)
	}
	return s
}

// burst returns the effective GCRA burst.
func (l Limit) burst() int {
	if l.Burst == 0 {
		return l.Rate
	}
	return l.Burst
}

// maxRate bounds Rate and Burst so that every count fits a Lua number
// exactly and a sliding log stays within reason.
const maxRate = 1 << 40

// minEmission is the shortest GCRA emission interval (Period/Rate): times
// are microseconds in doubles, which near the current epoch resolve 0.25µs.
const minEmission = 10 * time.Microsecond

// validate says what is wrong with l for algorithm a, or nil.
func (l Limit) validate(a Algorithm) error {
	switch {
	case l.Rate <= 0 || l.Rate > maxRate:
		return fmt.Errorf("rate %d outside 1..2^40", l.Rate)
	case l.Period < time.Millisecond:
		return fmt.Errorf("period %v below 1ms", l.Period)
	case l.Period%time.Millisecond != 0:
		return fmt.Errorf("period %v is not a whole number of milliseconds", l.Period)
	case l.Period > maxPeriod:
		return fmt.Errorf("period %v is longer than a year (366 days)", l.Period)
	case l.Burst < 0 || l.Burst > maxRate:
		return fmt.Errorf("burst %d outside 0..2^40", l.Burst)
	case l.Burst != 0 && a != GCRA:
		return fmt.Errorf("burst applies to GCRA only, not %v", a)
	case a == GCRA && l.Period/time.Duration(l.Rate) < minEmission:
		return fmt.Errorf("GCRA rate %d per %v is above one per %v", l.Rate, l.Period, minEmission)
	case a == Sliding && l.Rate > maxSlidingRate:
		return fmt.Errorf("a Sliding rule keeps one entry per request: rate %d is above %d, use SlidingCounter", l.Rate, maxSlidingRate)
	}
	return nil
}

// maxPeriod is the longest Period: one year (366 days).
const maxPeriod = 366 * 24 * time.Hour

// Rule is one limit enforced with one algorithm.
type Rule struct {
	Algorithm Algorithm // required: FixedWindow, Sliding, SlidingCounter or GCRA
	Limit     Limit     // Rate > 0, Period >= 1ms; Burst only for GCRA
}

// Policy is the list of rules a Limiter enforces together: a request is
// admitted only if every rule admits it, and then it is counted by every
// rule, atomically (all or nothing). A Policy must hold at least one rule
// and at most one rule per algorithm and period.
type Policy []Rule

// capacity is the most a rule can ever admit at once.
func (r Rule) capacity() int {
	if r.Algorithm == GCRA {
		return r.Limit.burst()
	}
	return r.Limit.Rate
}

const maxRules = 16

// validate returns ErrInvalid for op, saying what is wrong, or nil.
func (p Policy) validate(op string) error {
	if len(p) == 0 {
		return pkg.Invalidf(op, "empty policy")
	}
	if len(p) > maxRules {
		return pkg.Invalidf(op, "%d rules, at most %d", len(p), maxRules)
	}
	type slot struct {
		a Algorithm
		p time.Duration
	}
	seen := map[slot]bool{}
	for i, r := range p {
		switch r.Algorithm {
		case FixedWindow, Sliding, SlidingCounter, GCRA:
		default:
			return pkg.Invalidf(op, "rule %d: unknown algorithm %v", i, r.Algorithm)
		}
		if err := r.Limit.validate(r.Algorithm); err != nil {
			return pkg.Invalidf(op, "rule %d (%v %v): %v", i, r.Algorithm, r.Limit, err)
		}
		s := slot{r.Algorithm, r.Limit.Period}
		if seen[s] {
			return pkg.Invalidf(op, "rule %d: two %v rules with period %v would share a key", i, r.Algorithm, r.Limit.Period)
		}
		seen[s] = true
	}
	return nil
}

// windowName is the {window} key segment and header name of a period:
// "second", "minute", "hour", "day" (seed 001's names), otherwise the
// period in its largest whole unit ("15m", "90s", "1500ms", "7d").
func windowName(d time.Duration) string {
	switch d {
	case time.Second:
		return "second"
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	switch {
	case d <= 0:
		return d.String()
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return d.String()
}
