package queue

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed delete.lua
	deleteSrc string
	//go:embed requeue.lua
	requeueSrc string
	//go:embed purge.lua
	purgeSrc string

	deleteOp  = pkg.Declare("delete", deleteSrc, with(liveKeys, replyKey, flowsKey, statsKey, wakeKey), call.Uses(lib, call.Batched, call.JSONStr))
	requeueOp = pkg.Declare("requeue", requeueSrc,
		[]*keys.Template{jobsKey, stateKey, priorityKey, priorityKey, priorityKey, deadKey, wakeKey, replyKey}, call.Uses(lib, call.Batched, call.JSONStr))
	purgeOp = pkg.Declare("purge", purgeSrc, with(liveKeys, replyKey, flowsKey), call.Uses(lib, call.Batched, call.JSONStr))
)

// Delete removes the job with the given ID from any state (one script).
// A consumer holding it gets ErrLeaseLost when it settles. ErrNotFound if
// there is none. A resent request (go-redis, after a lost reply) reports
// the first outcome. Deleting a flow's child counts as a dead child (see
// EnqueueFlow); deleting a waiting parent leaves its children to run.
func (q *Queue[T]) Delete(ctx context.Context, id string) error {
	const op = "delete"
	if _, err := q.jobKey(op, id); err != nil {
		return err
	}
	rep, err := q.run.Run(ctx, deleteOp, with(q.live, q.request(), q.flows, q.stats, q.wake), id, unit.MsCeil(replayWindow), q.o.deadCap, unit.MsCeil(deadTTL))
	if err != nil {
		return err
	}
	if rep.Status == call.None {
		return pkg.Fail(op, q.jobs, ErrNotFound, fmt.Errorf("job %q", id))
	}
	return nil
}

// Requeue moves the job with the given ID from the dead-letter list back
// to ready at its priority, with its retry count reset (one script). It
// returns ErrNotFound if the ID is not in the dead-letter list,
// ErrDuplicate if a live job has taken the ID meanwhile (the dead entry
// stays), and an error matching keys.ErrCorrupt naming the dead-letter
// list when the entry holds no job to requeue. A resent request reports
// the first outcome.
func (q *Queue[T]) Requeue(ctx context.Context, id string) error {
	const op = "requeue"
	if _, err := q.jobKey(op, id); err != nil {
		return err
	}
	rep, err := q.run.Run(ctx, requeueOp, []string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.dead, q.wake, q.request()}, id, unit.MsCeil(replayWindow))
	if err != nil {
		return err
	}
	switch rep.Status {
	case call.None:
		return pkg.Fail(op, q.dead, ErrNotFound, fmt.Errorf("job %q", id))
	case call.Conflict:
		return pkg.Fail(op, q.jobs, ErrDuplicate, fmt.Errorf("job %q is live", id))
	}
	return nil
}

// maxPurge bounds one Purge call, so a single script never blocks Redis
// for long.
const maxPurge = 10000

// Purge deletes up to limit jobs in state (1 to 10,000 per call, so the
// script stays short; call again until it returns fewer than limit):
// pending and scheduled jobs by priority then age, active jobs by lease
// deadline (their workers get ErrLeaseLost), dead letters oldest first.
// One script (one round trip). It returns how many were deleted. The stats
// counters are not changed: purged jobs were neither processed nor failed.
// A purged flow child takes its waiting parent with it (counted in the
// number returned).
// A resent request reports the first count and deletes nothing more.
func (q *Queue[T]) Purge(ctx context.Context, state State, limit int) (int, error) {
	const op = "purge"
	if !state.valid() {
		return 0, pkg.Invalidf(op, "state %q", state)
	}
	if limit < 1 || limit > maxPurge {
		return 0, pkg.Invalidf(op, "purge limit %d outside [1, %d]", limit, maxPurge)
	}
	rep, err := q.run.Run(ctx, purgeOp, with(q.live, q.request(), q.flows), string(state), limit, unit.MsCeil(replayWindow))
	if err != nil {
		return 0, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return 0, err
	}
	return int(n), nil
}
