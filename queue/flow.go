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
	//go:embed flow.lua
	flowSrc string

	flowOp, flowEvOp = twin("flow", flowSrc,
		[]*keys.Template{jobsKey, priorityKey, priorityKey, priorityKey, statsKey, wakeKey, replyKey, flowsKey}, call.Uses(lib, call.Batched, call.JSONStr), call.Durable())
)

// maxFlowChildren bounds the children of one flow (EnqueueFlow).
const maxFlowChildren = 1000

// DeadChild is what a dead child does to its flow's parent (EnqueueFlow).
type DeadChild int

const (
	// FailParent dead-letters the parent as soon as one child is
	// dead-lettered or cancelled (its error names the child); the other
	// children go on. The default.
	FailParent DeadChild = iota
	// IgnoreDead counts a dead or cancelled child as finished: the parent
	// runs once every child was acked or dead-lettered.
	IgnoreDead
)

// EnqueueFlow enqueues a parent job and its children (1 to
// 1,000) in one script: the children are ready at once, the
// parent becomes ready (in its priority, behind what is ready then) when
// the last child has left the queue, counted down by the script that
// acks, dead-letters or cancels each child, so it runs exactly once,
// after all of them. A dead-lettered or cancelled child fails the parent
// (dead-lettered, "flow child <id> is dead") or is ignored, as
// dead says (FailParent or IgnoreDead). Every job of the flow is a job of q, on the queue's
// slot; each Item takes the options of Enqueue but WithDelay,
// WithProcessAt and WithUnique (ErrInvalid). A job ID that is live gives
// ErrDuplicate, and nothing is written. It returns the parent's and the
// children's IDs. Delete of a child counts as a dead child; Purge of a
// child purges its waiting parent too. While it waits, the parent is in the jobs hash
// but in no priority set: Peek reports it as Waiting, List does not
// show it and Stats does not count it as pending.
func (q *Queue[T]) EnqueueFlow(ctx context.Context, parent Item[T], children []Item[T], dead DeadChild) (string, []string, error) {
	const op = "flow"
	policy := "fail"
	switch dead {
	case FailParent:
	case IgnoreDead:
		policy = "ignore"
	default:
		return "", nil, pkg.Invalidf(op, "dead-child policy %d", int(dead))
	}
	if len(children) < 1 || len(children) > maxFlowChildren {
		return "", nil, pkg.Invalidf(op, "%d children, want 1 to %d", len(children), maxFlowChildren)
	}
	args := make([]any, 0, 3+3*(1+len(children)))
	args = append(args, policy, unit.MsCeil(replayWindow), q.o.events)
	ids := make([]string, 0, 1+len(children))
	seen := map[string]bool{}
	for i, it := range append([]Item[T]{parent}, children...) {
		var ec enqueueConfig
		for _, f := range it.Options {
			f(&ec)
		}
		if ec.delay != 0 || !ec.processAt.IsZero() || ec.unique != 0 {
			return "", nil, pkg.Invalidf(op, "job %d of the flow: no delay, process-at or uniqueness window in a flow", i)
		}
		p, err := q.prepare(op, it.Payload, it.Options)
		if err != nil {
			return "", nil, err
		}
		if seen[p.id] {
			return "", nil, pkg.Invalidf(op, "job ID %q twice in the flow", p.id)
		}
		seen[p.id] = true
		ids = append(ids, p.id)
		args = append(args, p.id, p.args[1], ec.priority.String())
	}
	rep, err := q.run.Run(ctx, q.pick(flowOp, flowEvOp),
		q.ev([]string{q.jobs, q.levels[0], q.levels[1], q.levels[2], q.stats, q.wake, q.request(), q.flows}), args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		return "", nil, err
	}
	if rep.Status == call.Conflict {
		id, _ := rep.OptStr(0)
		return "", nil, pkg.Fail(op, q.jobs, ErrDuplicate, fmt.Errorf("job %q is live", id))
	}
	return ids[0], ids[1:], nd
}
