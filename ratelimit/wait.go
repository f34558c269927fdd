package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrLimited is returned by Wait when ctx ends (or its deadline would pass)
// before the request is admitted; it comes joined with the context's
// error.
var ErrLimited = errors.New("ratelimit: limited")

// Wait blocks until id is admitted for cost, and returns that Result: it
// checks as AllowN does and, on a refusal, sleeps the Result's RetryAfter
// and checks again (other callers may take the units meanwhile, so a wait
// can take several checks; each is one round trip, and each is seen by the
// decision hook). When ctx has a deadline that comes before the next retry,
// Wait returns at once with the refusal's Result and
// errors.Join(ErrLimited, context.DeadlineExceeded), instead of sleeping
// in vain; when ctx ends while sleeping, errors.Join(ErrLimited,
// ctx.Err()). A cost above what a rule can ever admit (RetryAfter =
// Never) returns at once with the refusal's Result and an error matching
// ErrLimited, without a context error. Other errors as AllowN's, returned
// at once. In shadow mode Wait never waits.
func (l *Limiter) Wait(ctx context.Context, id string, cost int) (Result, error) {
	for {
		res, _, _, err := l.decide(ctx, id, cost, false)
		if err != nil || res.Allowed {
			return res, err
		}
		d := res.RetryAfter
		if d == Never {
			return res, pkg.Fail("wait", "", ErrLimited, fmt.Errorf("cost %d is above what the policy can ever admit", cost))
		}
		if d <= 0 {
			d = time.Millisecond
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return res, errors.Join(ErrLimited, context.DeadlineExceeded)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, errors.Join(ErrLimited, ctx.Err())
		case <-t.C:
		}
	}
}
