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
	//go:embed promote.lua
	promoteSrc string

	deleteOp  = pkg.Declare("delete", deleteSrc, with(liveKeys, replyKey, flowsKey, statsKey, wakeKey, errorsKey, progressKey), call.Uses(lib, call.Batched, call.JSONStr))
	requeueOp = pkg.Declare("requeue", requeueSrc,
		[]*keys.Template{jobsKey, stateKey, priorityKey, priorityKey, priorityKey, deadKey, wakeKey, replyKey}, call.Uses(lib, call.Batched, call.JSONStr))
	purgeOp   = pkg.Declare("purge", purgeSrc, with(liveKeys, replyKey, flowsKey, errorsKey, progressKey), call.Uses(lib, call.Batched, call.JSONStr))
	promoteOp = pkg.Declare("promote", promoteSrc,
		[]*keys.Template{priorityKey, priorityKey, priorityKey, wakeKey, replyKey}, call.Uses(lib, call.Batched, call.JSONStr))
)

// maxBulk bounds the job IDs of one DeleteMany or RequeueMany call.
const maxBulk = 500

// checkIDs validates the job IDs of a bulk call: 1 to maxBulk, each a
// valid key segment.
func (q *Queue[T]) checkIDs(op string, ids []string) error {
	if len(ids) < 1 || len(ids) > maxBulk {
		return pkg.Invalidf(op, "%d job IDs outside [1, %d]", len(ids), maxBulk)
	}
	for _, id := range ids {
		if _, err := q.jobKey(op, id); err != nil {
			return err
		}
	}
	return nil
}

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
	n, err := q.delete(ctx, []string{id})
	if err != nil {
		return err
	}
	if n == 0 {
		return pkg.Fail(op, q.jobs, ErrNotFound, fmt.Errorf("job %q", id))
	}
	return nil
}

// DeleteMany deletes the jobs with the given IDs (1 to 500, else
// ErrInvalid; repeats count once), as Delete does each, in one script
// (one round trip, atomic): a live job goes from whatever state it is in,
// else its newest dead letter (the dead-letter list is read once). It
// returns how many were deleted; IDs not found are skipped. A resent
// request reports the first count.
func (q *Queue[T]) DeleteMany(ctx context.Context, ids ...string) (int, error) {
	const op = "delete many"
	if err := q.checkIDs(op, ids); err != nil {
		return 0, err
	}
	return q.delete(ctx, ids)
}

func (q *Queue[T]) delete(ctx context.Context, ids []string) (int, error) {
	args := make([]any, 0, 3+len(ids))
	args = append(args, unit.MsCeil(replayWindow), q.o.deadCap, unit.MsCeil(deadTTL))
	for _, id := range ids {
		args = append(args, id)
	}
	rep, err := q.run.Run(ctx, deleteOp, with(q.live, q.request(), q.flows, q.stats, q.wake, q.errors, q.progress), args...)
	if err != nil {
		return 0, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return 0, err
	}
	return int(n), nil
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
	rep, err := q.run.Run(ctx, requeueOp, q.requeueKeys(), unit.MsCeil(replayWindow), "ids", 0, id)
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

// RequeueMany moves the dead letters of the given IDs (1 to 500, else
// ErrInvalid; for an ID found more than once, its newest entry) back to
// ready as Requeue does each, in one script (one round trip, atomic; the
// dead-letter list is read once) and returns how many were requeued. IDs
// not in the list are skipped; entries that cannot be requeued (a live
// job has the ID, or no job is in them) stay. A resent request reports
// the first count.
func (q *Queue[T]) RequeueMany(ctx context.Context, ids ...string) (int, error) {
	const op = "requeue many"
	if err := q.checkIDs(op, ids); err != nil {
		return 0, err
	}
	args := []any{unit.MsCeil(replayWindow), "ids", 0}
	for _, id := range ids {
		args = append(args, id)
	}
	return q.requeueMany(ctx, args)
}

// RequeueDead moves up to limit dead letters (1 to 10,000), oldest first,
// back to ready as Requeue does each: one script (one round trip,
// atomic), and returns how many were requeued. Entries that cannot be
// requeued (a live job has the ID, or no job is in them) are skipped and
// left in the list, so calling again until it returns fewer than limit
// requeues every dead letter that can be. A resent request reports the
// first count.
func (q *Queue[T]) RequeueDead(ctx context.Context, limit int) (int, error) {
	const op = "requeue dead"
	if limit < 1 || limit > maxPurge {
		return 0, pkg.Invalidf(op, "limit %d outside [1, %d]", limit, maxPurge)
	}
	return q.requeueMany(ctx, []any{unit.MsCeil(replayWindow), "all", limit})
}

func (q *Queue[T]) requeueKeys() []string {
	return []string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.dead, q.wake, q.request()}
}

func (q *Queue[T]) requeueMany(ctx context.Context, args []any) (int, error) {
	rep, err := q.run.Run(ctx, requeueOp, q.requeueKeys(), args...)
	if err != nil {
		return 0, err
	}
	if rep.Status == call.None || rep.Status == call.Conflict { // one ID
		return 0, nil
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Promote makes the scheduled job with the given ID (delayed, or waiting
// for its retry backoff) ready now, at its priority, keeping its retry
// count: one script (one round trip, atomic). ErrNotFound when no job of
// that ID is scheduled (it is ready, in flight, dead, gone, or a flow's
// parent waiting for its children). A flow's child or a job of a group
// stays one: only its ready time changes. A resent request reports the
// first outcome.
func (q *Queue[T]) Promote(ctx context.Context, id string) error {
	const op = "promote"
	if _, err := q.jobKey(op, id); err != nil {
		return err
	}
	rep, err := q.run.Run(ctx, promoteOp, []string{q.levels[0], q.levels[1], q.levels[2], q.wake, q.request()}, id, unit.MsCeil(replayWindow))
	if err != nil {
		return err
	}
	if rep.Status == call.None {
		return pkg.Fail(op, q.jobs, ErrNotFound, fmt.Errorf("job %q is not scheduled", id))
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
	rep, err := q.run.Run(ctx, purgeOp, with(q.live, q.request(), q.flows, q.errors, q.progress), string(state), limit, unit.MsCeil(replayWindow))
	if err != nil {
		return 0, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return 0, err
	}
	return int(n), nil
}
