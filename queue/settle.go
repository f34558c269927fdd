package queue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

var (
	//go:embed settle.lua
	settleSrc string

	settleOp, settleEvOp = twin("settle", settleSrc, with(allKeys, progressKey, doneKey, doneAtKey, cancelKey, replyKey, flowsKey, dailyKey, errorsKey), call.Uses(lib, call.Batched, call.JSONStr), call.Durable())
)

// maxSettle bounds the outcomes one settle script writes.
const maxSettle = 512

// outcome is one job outcome for the settle script.
type outcome struct {
	op  byte // a ack, c cancelled, f fail, d dead, r release, e extend
	id  string
	dlv int64
	num int64
	err string // a failure's text; an ack's result JSON
}

// Results of one outcome, as settle.lua returns them.
const (
	settleLost = 0 // the lease was lost: nothing written
	settleDone = 1 // acked, scheduled for retry, released or extended
	settleDead = 2 // moved to the dead-letter list
	// settleCancelled: extended, and Cancel asked for the job to stop
	settleCancelled = 3
)

// settle writes up to maxSettle outcomes in one script and returns one
// result per outcome and the server time (rounded up to the ms). req is the request's reply memo
// (q.request()): a resend, by go-redis or by the caller, of the same
// outcomes with the same req reports the first run's results. With
// WithDurability the results may come with an ErrNotDurable error; on any
// other error they are nil.
func (q *Queue[T]) settle(ctx context.Context, op, req string, os []outcome) ([]int64, time.Time, error) {
	args := make([]any, 0, 6+5*len(os))
	args = append(args, q.o.deadCap, unit.MsCeil(deadTTL), unit.MsCeil(replayWindow), unit.MsCeil(q.o.retention), q.o.retainCap, q.o.events)
	ends := false
	for _, o := range os {
		args = append(args, string(o.op), o.id, o.dlv, o.num, o.err)
		ends = ends || o.op != 'e'
	}
	if ends && q.limits != "" {
		// a lease ends: wake a consumer a limit held back
		args = append(args, "w", "", 0, 0, "")
	}
	rep, err := q.run.Run(ctx, q.pick(settleOp, settleEvOp), q.ev(with(q.all, q.progress, q.done, q.doneAt, q.cancel, req, q.flows, q.dailyPre, q.errors)), args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		return nil, time.Time{}, pkg.Fail(op, q.jobs, nil, err)
	}
	now := rep.Int(0)
	r := rep.Ints(1)
	if err := rep.Err(); err != nil {
		return nil, time.Time{}, err
	}
	if len(r) != len(os) {
		return nil, time.Time{}, pkg.Fail(op, q.jobs, nil, fmt.Errorf("unexpected reply: %d results for %d outcomes", len(r), len(os)))
	}
	return r, msTime(now), nd
}

// settleDetached settles with a context that outlives ctx's cancellation,
// for clean-up that must happen (release on shutdown, dead-lettering a
// corrupt job).
func (q *Queue[T]) settleDetached(ctx context.Context, op string, os []outcome) ([]int64, error) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	r, _, err := q.settle(c, op, q.request(), os)
	return r, err
}

func (q *Queue[T]) settleOne(ctx context.Context, op string, j *Job[T], o outcome) (int64, error) {
	if j == nil {
		return 0, pkg.Invalidf(op, "nil job")
	}
	o.id, o.dlv = j.ID, j.Delivery
	r, now, err := q.settle(ctx, op, q.request(), []outcome{o})
	if r == nil {
		return 0, err
	}
	if r[0] == settleLost {
		return 0, pkg.Fail(op, q.active, ErrLeaseLost, fmt.Errorf("job %q, delivery %d", j.ID, j.Delivery))
	}
	if o.op == 'e' {
		j.LeaseDeadline = now.Add(time.Duration(o.num) * time.Millisecond)
		if r[0] == settleCancelled {
			return r[0], pkg.Fail(op, q.cancel, ErrCancelled, fmt.Errorf("job %q (lease extended)", j.ID))
		}
	}
	return r[0], err // nil, or ErrNotDurable
}

// Ack records j as done: it leaves the queue and total_processed,
// avg_process_time_ms and last_processed_at of the stats hash are updated
// in the same script; with WithRetention the job is kept, with its result
// (Job.SetResult) and last progress, as Completed. One round trip. ErrLeaseLost if the lease was
// recovered or the job deleted meanwhile (the job may run again: delivery
// is at-least-once). An Ack that go-redis resends after its reply was lost
// reports the first outcome (nil), never ErrLeaseLost; a network error or
// a timeout is returned as such (the ack may or may not be written). With
// WithDurability, an ack (and a Nack, Release or Extend) that fewer
// replicas acknowledged than asked is written and returns ErrNotDurable.
func (q *Queue[T]) Ack(ctx context.Context, j *Job[T]) error {
	var took int64 // a Job not from a dequeue (built by hand) adds no time
	if j != nil && !j.delivered.IsZero() {
		took = max(time.Since(j.delivered).Microseconds(), 0)
	}
	o := outcome{op: 'a', num: took}
	if j != nil {
		o.err = string(j.result)
	}
	_, err := q.settleOne(ctx, "ack", j, o)
	return err
}

// Nack records a failed attempt of j with cause. If the job has retries
// left it becomes ready again after the queue's backoff for its attempt
// (exponential with jitter by default), else it moves to the dead-letter
// list with cause as its last error. total_failed (and total_dead) count
// it. One round trip. It reports whether the job was dead lettered;
// ErrLeaseLost as for Ack.
func (q *Queue[T]) Nack(ctx context.Context, j *Job[T], cause error) (dead bool, err error) {
	if j == nil {
		return false, pkg.Invalidf("nack", "nil job")
	}
	r, err := q.settleOne(ctx, "nack", j, q.failOutcome(j, cause))
	return r == settleDead, err
}

// maxErrorText bounds the error text stored with a failed attempt.
const maxErrorText = 4096

func (q *Queue[T]) failOutcome(j *Job[T], cause error) outcome {
	msg := "failed"
	if cause != nil {
		msg = cause.Error()
	}
	if len(msg) > maxErrorText {
		msg = msg[:maxErrorText]
	}
	d := min(max(q.o.backoff.Delay(j.RetryCount+1), 0), maxDelay)
	return outcome{op: 'f', num: unit.MsCeil(d), err: msg}
}

// Release gives j back without counting an attempt: it is ready again at
// once, behind the jobs of its priority that were ready before the current
// millisecond. Use it when a worker stops before handling a job. One round
// trip; ErrLeaseLost as for Ack.
func (q *Queue[T]) Release(ctx context.Context, j *Job[T]) error {
	_, err := q.settleOne(ctx, "release", j, outcome{op: 'r'})
	return err
}

// Extend renews j's lease for the queue's lease duration from now (server
// clock) and updates j.LeaseDeadline. One round trip; ErrLeaseLost as for
// Ack; ErrCancelled (the lease is extended all the same) when Cancel asked
// for the job to stop. Run extends the leases of running jobs itself.
func (q *Queue[T]) Extend(ctx context.Context, j *Job[T]) error {
	_, err := q.settleOne(ctx, "extend", j, outcome{op: 'e', num: unit.MsCeil(q.o.lease)})
	return err
}
