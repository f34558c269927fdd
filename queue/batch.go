package queue

import (
	"context"

	"github.com/redschema/redschema/internal/call"
)

// maxBatch bounds one EnqueueBatch call.
const maxBatch = 10000

// Item is one job of EnqueueBatch.
type Item[T any] struct {
	Payload T
	Options []EnqueueOption
}

// BatchError reports the items of EnqueueBatch that were not enqueued,
// or (with WithDurability) not acknowledged by enough replicas. Its field
// Errs []error has one entry per item: nil for an item enqueued, an error matching
// ErrNotDurable for one enqueued (its ID is returned) but not confirmed
// on the replicas, another error for one not enqueued. It matches every
// item error with errors.Is (ErrDuplicate, ErrInvalid, ...). Its Error
// summarises the failed items (the first three, and a count). It is the
// library's one batch error, also sensor.BatchError.
type BatchError = call.BatchError

// EnqueueBatch enqueues up to 10,000 items in one pipeline (one round
// trip; on a cluster every item of one queue goes to the same node). Each
// item is atomic on its own, the batch is not: items that fail validation
// are not sent, the others are. It returns the IDs in item order ("" for
// items not enqueued) and a *BatchError naming the failed items, or nil.
// More than 10,000 items is ErrInvalid, and nothing is sent.
func (q *Queue[T]) EnqueueBatch(ctx context.Context, items []Item[T]) ([]string, error) {
	const op = "enqueue"
	if len(items) > maxBatch {
		return nil, pkg.Invalidf(op, "%d items, at most %d per batch", len(items), maxBatch)
	}
	ids := make([]string, len(items))
	errs := make([]error, len(items))
	ps := make([]prepared, len(items))
	calls := make([]call.Call, 0, len(items))
	idx := make([]int, 0, len(items))
	failed := false
	for i, it := range items {
		p, err := q.prepare(op, it.Payload, it.Options)
		if err != nil {
			errs[i], failed = err, true
			continue
		}
		ps[i] = p
		calls = append(calls, call.Call{Op: p.op, Keys: p.keys, Args: p.args})
		idx = append(idx, i)
	}
	if len(calls) > 0 {
		reps, rerrs := q.run.RunMany(ctx, calls)
		for j, i := range idx {
			nd, err := call.NotDurable(rerrs[j])
			if err := q.enqueued(ps[i], reps[j], err); err != nil {
				errs[i], failed = err, true
				continue
			}
			ids[i] = ps[i].id
			if nd != nil {
				errs[i], failed = nd, true
			}
		}
	}
	if failed {
		return ids, pkg.Batch(errs, "item", "not enqueued or not durable")
	}
	return ids, nil
}
