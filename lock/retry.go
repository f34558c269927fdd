package lock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryStrategy says how long Acquire waits before its next attempt.
// Implementations must be safe for concurrent use; the ones in this package
// are stateless values.
type RetryStrategy interface {
	// Backoff returns the wait before attempt number attempt+1, given that
	// attempts 0..attempt failed, or a negative duration to stop trying.
	Backoff(attempt int) time.Duration
}

type noRetry struct{}

func (noRetry) Backoff(int) time.Duration { return -1 }

// NoRetry makes Acquire try once, like TryAcquire.
func NoRetry() RetryStrategy { return noRetry{} }

type linear time.Duration

func (l linear) Backoff(int) time.Duration {
	if l <= 0 {
		return -1 // refused by Acquire (see LinearBackoff): never used
	}
	return time.Duration(l)
}

// LinearBackoff retries every d until the wait ends (see WithRetry). A d
// below 1ms is raised to 1ms. A d of zero or less is refused with
// ErrInvalid by the call that uses the strategy: redislock's
// LinearBackoff(0) means "no retry", which is NoRetry here.
func LinearBackoff(d time.Duration) RetryStrategy {
	if d <= 0 {
		return linear(0)
	}
	return linear(max(d, time.Millisecond))
}

type exponential struct{ lo, hi time.Duration }

func (e exponential) Backoff(attempt int) time.Duration {
	if e.hi <= 0 {
		return -1 // refused by Acquire (see ExponentialBackoff): never used
	}
	// Double without overflowing: a shift such as lo<<attempt wraps negative
	// for large lo and attempt, and a negative wait would reach Int64N.
	d := e.lo
	for i := 0; i < attempt && d < e.hi; i++ {
		if d > e.hi/2 {
			d = e.hi
		} else {
			d *= 2
		}
	}
	d = min(d, e.hi)
	// Equal jitter: half fixed, half random, so waiters spread out but
	// never spin.
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// ExponentialBackoff retries after waits that double from lo up to hi, each
// with random jitter over its upper half, until the wait ends (see
// WithRetry). A lo below 1ms is raised to 1ms; a positive hi below lo is
// raised to lo. A hi of zero or less is refused with ErrInvalid by the
// call that uses the strategy: redislock's max of 0 means "no cap", and
// here hi is the cap.
func ExponentialBackoff(lo, hi time.Duration) RetryStrategy {
	lo = max(lo, time.Millisecond)
	if hi <= 0 {
		return exponential{lo: lo}
	}
	return exponential{lo: lo, hi: max(hi, lo)}
}

type limited struct {
	s RetryStrategy
	n int
}

func (l limited) Backoff(attempt int) time.Duration {
	if attempt >= l.n {
		return -1
	}
	return l.s.Backoff(attempt)
}

// LimitRetry stops s after n retries (n+1 attempts in all).
func LimitRetry(s RetryStrategy, n int) RetryStrategy { return limited{s: s, n: n} }

// checkRetry says what is wrong with a strategy of this package that
// cannot work, or nil: a LinearBackoff or ExponentialBackoff cap of zero
// or less (redislock's "no retry" and "no cap"), a LimitRetry of nil.
func checkRetry(s RetryStrategy) error {
	switch s := s.(type) {
	case nil:
		return fmt.Errorf("nil retry strategy")
	case linear:
		if s <= 0 {
			return fmt.Errorf("LinearBackoff with a wait of zero or less: use NoRetry to try once")
		}
	case exponential:
		if s.hi <= 0 {
			return fmt.Errorf("ExponentialBackoff with a cap of zero or less: give hi, the longest wait")
		}
	case limited:
		return checkRetry(s.s)
	}
	return nil
}

// waitEnd is when a wait for a lease of ttl gives up by itself: ttl from
// now when ctx has no deadline (as redislock's Obtain does), else never
// (the zero time: ctx's deadline ends the wait).
func waitEnd(ctx context.Context, ttl time.Duration) time.Time {
	if _, ok := ctx.Deadline(); ok {
		return time.Time{}
	}
	return time.Now().Add(ttl)
}

// capWait trims the wait d before the next attempt so that the last
// attempt is made at end; it returns -1 (stop) once end has passed, and d
// unchanged when end is zero or d already says stop.
func capWait(d time.Duration, end time.Time) time.Duration {
	if end.IsZero() || d < 0 {
		return d
	}
	left := time.Until(end)
	if left <= 0 {
		return -1
	}
	return min(d, left)
}
