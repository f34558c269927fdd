package queue

import (
	"context"
	_ "embed"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed pause.lua
	pauseSrc string

	pauseOp = pkg.Declare("pause", pauseSrc, []*keys.Template{statsKey, wakeKey}, call.Durable())
)

// Pause stops the queue delivering jobs, for every consumer in every
// process: the dequeue script reads the flag (the stats hash's paused
// field), so Dequeue waits, TryDequeue returns ErrEmpty and Run's workers
// idle. Jobs in flight are not touched: their handlers run to the end and
// settle as usual, and expired leases still come back to pending.
// Enqueue, Schedule and the admin calls go on working. It reports whether
// the queue was running (false: it was already paused, and its pause time
// is kept). One script (one round trip); sending it again is harmless.
// With WithDurability it waits for replicas like Enqueue.
func (q *Queue[T]) Pause(ctx context.Context) (bool, error) {
	return q.pause(ctx, "1")
}

// Resume undoes Pause: delivery starts again at once (a wake-up token
// wakes a waiting consumer). It reports whether the queue was paused.
// One script (one round trip); sending it again is harmless.
func (q *Queue[T]) Resume(ctx context.Context) (bool, error) {
	return q.pause(ctx, "0")
}

func (q *Queue[T]) pause(ctx context.Context, flag string) (bool, error) {
	rep, err := q.run.Run(ctx, pauseOp, []string{q.stats, q.wake}, flag)
	nd, err := call.NotDurable(err)
	if err != nil {
		return false, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return false, err
	}
	return n == 1, nd
}
