package queue

import (
	"math/rand/v2"
	"time"
)

// Backoff chooses the delay before retry number attempt (1 for the first
// retry). Implementations must be safe for concurrent use.
type Backoff interface {
	Delay(attempt int) time.Duration
}

// BackoffFunc adapts a function to Backoff.
type BackoffFunc func(attempt int) time.Duration

// Delay implements Backoff.
func (f BackoffFunc) Delay(attempt int) time.Duration { return f(attempt) }

// ExponentialBackoff doubles the delay with each retry from base up to
// max, with "equal jitter": the delay is uniformly random in [d/2, d], so
// retries of jobs that failed together spread out.
func ExponentialBackoff(base, max time.Duration) Backoff {
	return BackoffFunc(func(attempt int) time.Duration {
		if attempt < 1 {
			attempt = 1
		}
		d := base
		for i := 1; i < attempt && d < max; i++ {
			d *= 2
		}
		if d > max {
			d = max
		}
		if d <= 0 {
			return 0
		}
		half := d / 2
		return half + time.Duration(rand.Int64N(int64(d-half)+1))
	})
}

// ConstantBackoff retries after d every time.
func ConstantBackoff(d time.Duration) Backoff {
	return BackoffFunc(func(int) time.Duration { return d })
}
