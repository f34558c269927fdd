package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/reply"
)

// dequeue leases up to n jobs in one round trip. With none ready it returns
// how long until a delayed job or a lease deadline is due (-1: nothing
// pending at all).
func (q *Queue[T]) dequeue(ctx context.Context, n int) ([]*Job[T], time.Duration, error) {
	v, err := q.run(ctx, dequeueScript, "dequeue", q.all, n, ms(q.o.lease), q.o.deadCap, ms(DeadTTL), ms(wakeTTL))
	if err != nil {
		return nil, 0, err
	}
	a, err := reply.Slice(v, -1)
	if err != nil || len(a) == 0 {
		return nil, 0, fmt.Errorf("queue: dequeue %q: %w", q.name, errors.Join(err, reply.ErrUnexpected))
	}
	wait, err := reply.Int64(a[0])
	if err != nil {
		return nil, 0, fmt.Errorf("queue: dequeue %q: %w", q.name, err)
	}
	jobs, err := q.decodeLeased(ctx, a[1:])
	return jobs, time.Duration(wait) * time.Millisecond, err
}

// TryDequeue leases the next ready job without waiting: the oldest High
// job, else the oldest Normal, else the oldest Low. Jobs whose lease
// expired are first returned to ready (counted as a failed attempt, or dead
// lettered after their last retry) in the same script. One round trip.
// With no ready job it returns ErrEmpty. A job whose stored data cannot be
// decoded is moved to the dead-letter list and reported as an error
// matching keys.ErrCorrupt. If ctx ends while the reply is in flight, the
// job stays leased until its lease expires and then comes back (counted as
// a failed attempt): nothing is lost.
func (q *Queue[T]) TryDequeue(ctx context.Context) (*Job[T], error) {
	jobs, _, err := q.dequeue(ctx, 1)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrEmpty, q.name)
	}
	return jobs[0], nil
}

// Dequeue leases the next ready job, waiting until one is ready or ctx is
// done (then it returns ctx's error, wrapped). While idle it blocks on the
// queue's wake-up list, which every enqueue of a ready job signals, for at
// most maxIdleWait between attempts, so jobs that become ready by delay or
// lease expiry are found too.
func (q *Queue[T]) Dequeue(ctx context.Context) (*Job[T], error) {
	for {
		jobs, wait, err := q.dequeue(ctx, 1)
		if err != nil {
			return nil, err
		}
		if len(jobs) > 0 {
			return jobs[0], nil
		}
		if err := q.idle(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// maxIdleWait bounds one blocking wait, and with it how late a consumer
// notices a cancelled context or a missed wake-up.
const maxIdleWait = 250 * time.Millisecond

// idle blocks on the wake-up list for up to wait (bounded to
// [1ms, maxIdleWait]).
func (q *Queue[T]) idle(ctx context.Context, wait time.Duration) error {
	if wait < 0 || wait > maxIdleWait {
		wait = maxIdleWait
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = time.Until(dl)
	}
	if wait < time.Millisecond {
		wait = time.Millisecond
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue: dequeue %q: %w", q.name, err)
	}
	// BLPOP with a fractional timeout (Redis >= 6); go-redis's BLPop
	// rounds anything under a second up to one.
	err := q.client.Do(ctx, "blpop", q.wake, strconv.FormatFloat(wait.Seconds(), 'f', 3, 64)).Err()
	switch {
	case err == nil, errors.Is(err, redis.Nil):
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("queue: dequeue %q: %w", q.name, ctx.Err())
	}
	// A broken connection: back off a little and let the next dequeue
	// report a persistent failure.
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("queue: dequeue %q: %w", q.name, ctx.Err())
	case <-t.C:
	}
	return nil
}

type settleOp struct {
	op  byte // a ack, f fail, d dead, r release, e extend
	id  string
	dlv int64
	num int64
	err string
}

// settle applies ops in one script; results: 0 lease lost, 1 done, 2 dead.
func (q *Queue[T]) settle(ctx context.Context, ops []settleOp) ([]int64, time.Time, error) {
	args := make([]any, 0, 3+5*len(ops))
	args = append(args, q.o.deadCap, ms(DeadTTL), ms(wakeTTL))
	for _, o := range ops {
		args = append(args, string(o.op), o.id, o.dlv, o.num, o.err)
	}
	v, err := q.run(ctx, settleScript, "settle", q.all, args...)
	if err != nil {
		return nil, time.Time{}, err
	}
	r, err := reply.Int64s(v)
	if err != nil || len(r) != len(ops)+1 {
		return nil, time.Time{}, fmt.Errorf("queue: settle %q: %w", q.name, errors.Join(err, reply.ErrUnexpected))
	}
	return r[:len(ops)], msTime(r[len(ops)]), nil
}

// settleDetached settles with a context that outlives ctx's cancellation,
// for clean-up that must happen (release on shutdown, dead-lettering a
// corrupt job).
func (q *Queue[T]) settleDetached(ctx context.Context, ops []settleOp) ([]int64, error) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	r, _, err := q.settle(c, ops)
	return r, err
}

func (q *Queue[T]) settleOne(ctx context.Context, j *Job[T], o settleOp, op string) (int64, error) {
	if j == nil {
		return 0, fmt.Errorf("%w: nil job", ErrInvalid)
	}
	o.id, o.dlv = j.ID, j.Delivery
	r, now, err := q.settle(ctx, []settleOp{o})
	if err != nil {
		return 0, err
	}
	if r[0] == 0 {
		return 0, fmt.Errorf("%w: %s job %q (delivery %d) in queue %q", ErrLeaseLost, op, j.ID, j.Delivery, q.name)
	}
	if o.op == 'e' {
		j.LeaseDeadline = now.Add(time.Duration(o.num) * time.Millisecond)
	}
	return r[0], nil
}

// Ack records j as done: it leaves the queue and total_processed,
// avg_process_time_ms and last_processed_at of the stats hash are updated
// in the same script. One round trip. ErrLeaseLost if the lease was
// recovered or the job deleted meanwhile (the job may run again: delivery
// is at-least-once).
func (q *Queue[T]) Ack(ctx context.Context, j *Job[T]) error {
	if j == nil {
		return fmt.Errorf("%w: nil job", ErrInvalid)
	}
	var took int64 // a Job not from a dequeue (built by hand) adds no time
	if !j.delivered.IsZero() {
		took = max(time.Since(j.delivered).Microseconds(), 0)
	}
	_, err := q.settleOne(ctx, j, settleOp{op: 'a', num: took}, "ack")
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
		return false, fmt.Errorf("%w: nil job", ErrInvalid)
	}
	r, err := q.settleOne(ctx, j, q.failOp(j, cause), "nack")
	return r == 2, err
}

func (q *Queue[T]) failOp(j *Job[T], cause error) settleOp {
	msg := "failed"
	if cause != nil {
		msg = cause.Error()
	}
	if len(msg) > 4096 {
		msg = msg[:4096]
	}
	d := q.o.backoff.Delay(j.RetryCount + 1)
	if d < 0 {
		d = 0
	}
	return settleOp{op: 'f', num: ms(d), err: msg}
}

// Release gives j back without counting an attempt: it is ready again at
// once, behind the jobs of its priority that were ready before the current
// millisecond. Use it when a worker stops before
// handling a job. One round trip; ErrLeaseLost as for Ack.
func (q *Queue[T]) Release(ctx context.Context, j *Job[T]) error {
	_, err := q.settleOne(ctx, j, settleOp{op: 'r'}, "release")
	return err
}

// Extend renews j's lease for the queue's lease duration from now (server
// clock) and updates j.LeaseDeadline. One round trip; ErrLeaseLost as for
// Ack. Run extends the leases of running jobs itself.
func (q *Queue[T]) Extend(ctx context.Context, j *Job[T]) error {
	_, err := q.settleOne(ctx, j, settleOp{op: 'e', num: ms(q.o.lease)}, "extend")
	return err
}
