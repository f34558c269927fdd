// Package sweep runs the background loop of the packages that keep one
// schedule per cluster slot (presence's online index and channels,
// session's expiries): a sweep of a batch of slots every interval, round
// the whole ring of slots, from a random slot so that several instances
// spread out; and the steps of one sweep that they share: loading its
// scripts once, the due phase that asks each slot of a batch what is due
// (Due) and the count of what the visits announced (Count).
package sweep

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Check returns why every and batch cannot sweep a ring of n slots
// within window (a cycle, ceil(n/batch) intervals, must fit in it), or
// "" when they can.
func Check(n int, every time.Duration, batch int, window time.Duration) string {
	if every <= 0 || batch < 1 || batch > n {
		return fmt.Sprintf("every %v, batch %d: want every > 0 and batch in [1, %d]", every, batch, n)
	}
	if cycle := time.Duration((n+batch-1)/batch) * every; every > window || cycle > window {
		return fmt.Sprintf("a cycle of %v exceeds the sweep window %v", cycle, window)
	}
	return ""
}

// Loop calls sweep(ctx, first, batch) every interval over a ring of n
// slots, starting at a random one, until ctx is done, and returns
// ctx.Err(). A failed sweep is passed to onError (if not nil, and unless
// ctx ended) and the loop moves on. Check every and batch first.
func Loop(ctx context.Context, n int, every time.Duration, batch int,
	sweep func(ctx context.Context, first, count int) (int, error), onError func(error)) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	cursor := rand.IntN(n)
	for {
		if _, err := sweep(ctx, cursor, batch); err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		cursor = (cursor + batch) % n
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
