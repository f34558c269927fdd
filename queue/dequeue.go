package queue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	// lib is lib.lua, the helpers the queue's scripts share.
	//go:embed lib.lua
	lib string
	//go:embed dequeue.lua
	dequeueSrc string

	dequeueOp, dequeueEvOp = twin("dequeue", dequeueSrc, with(allKeys, inboxKey, replyKey, flowsKey, dailyKey, errorsKey, progressKey), call.Uses(lib, call.Batched, call.JSONStr), call.Needs(call.RFC3339), call.Durable())
)

// maxFetch bounds the jobs one dequeue script leases.
const maxFetch = 512

// A group-limited dequeue that has found a job may stop reading the ready
// jobs early once every group it saw is full, and so is every group that
// the last whole read found (see groupScan) that it has not seen, while
// that list is at most groupSeenFor old and names at most groupSeenMax
// groups; otherwise it reads on, and writes the list again. It reads on
// for a remembered group with room only up to groupLook jobs.
const (
	groupSeenFor = 100 * time.Millisecond
	groupSeenMax = 32
	groupLook    = 300
)

// dequeue leases up to n (1 to maxFetch) jobs in one round trip. With
// none ready it returns how long until a delayed job or a lease deadline
// is due (-1: nothing pending at all). The error reports what the script
// found corrupt and repaired (keys.ErrCorrupt, naming the key), and the
// jobs whose JSON does not decode (dead-lettered), and, with
// WithDurability, ErrNotDurable when jobs were leased but the lease is not
// on enough replicas: jobs may come with it.
func (q *Queue[T]) dequeue(ctx context.Context, n int) ([]*Job[T], time.Duration, error) {
	return q.fetch(ctx, n, true)
}

// fetch is dequeue, reading the inbox only when inbox is set: the inbox
// holds what a consumer's blocking wait moved out of the wake list, so a
// consumer reads it after it waited (and when it starts, for what a
// consumer that died after its wait left there).
func (q *Queue[T]) fetch(ctx context.Context, n int, inbox bool) ([]*Job[T], time.Duration, error) {
	const op = "dequeue"
	readInbox := "0"
	if inbox || q.o.seed { // WithSeedConsumers: the "inbox" is the executions list
		readInbox = "1"
	}
	args := []any{n, unit.MsCeil(q.o.lease), q.o.deadCap, unit.MsCeil(deadTTL), unit.MsCeil(replayWindow), q.o.maxRetries, unit.MsCeil(maxLease), readInbox, q.o.events}
	if q.limits != "" {
		args = append(args, q.limits)
	}
	rep, err := q.run.Run(ctx, q.pick(dequeueOp, dequeueEvOp), q.ev(with(with(q.all, q.inbox, q.request(), q.flows, q.dailyPre, q.errors, q.progress), q.limitKeys...)), args...)
	nd, err := call.NotDurable(err)
	if err != nil {
		return nil, 0, err
	}
	wait := rep.Int(0)
	rows := rep.List(1)
	notes := rep.List(2)
	if err := rep.Err(); err != nil {
		return nil, 0, err
	}
	var errs []error
	keys9 := with(q.all, q.inbox)
	for i := 0; i+1 < len(notes); i += 2 {
		r := rowReader{vals: notes[i : i+2]}
		ki, why := r.int(0), r.str(1)
		var k string
		switch {
		case r.err == nil && ki == 0:
			// a limit key the script built (not in KEYS): named in the note
			k, why, _ = strings.Cut(why, "\n")
		case r.err != nil || ki < 1 || int(ki) > len(keys9):
			return nil, 0, pkg.Fail(op, q.jobs, nil, fmt.Errorf("unexpected reply: corruption note %v", notes[i:i+2]))
		default:
			k = keys9[ki-1]
		}
		errs = append(errs, pkg.Fail(op, k, nil, keys.Corrupt(k, errors.New(why))))
	}
	jobs, err := q.decodeLeased(ctx, rows)
	errs = append(errs, err)
	if len(jobs) > 0 {
		// Nothing delivered, nothing to lose: an empty poll's unconfirmed
		// write (a recovered lease, a reply memo) is not reported.
		errs = append(errs, nd)
	}
	return jobs, time.Duration(wait) * time.Millisecond, errors.Join(errs...)
}

// notDurable returns the ErrNotDurable error in err (a join), or nil.
func notDurable(err error) error {
	if !errors.Is(err, ErrNotDurable) {
		return nil
	}
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range u.Unwrap() {
			if errors.Is(e, ErrNotDurable) {
				return e
			}
		}
	}
	return err
}

// decodeLeased turns dequeue's rows (8 values per job) into jobs. A job
// whose stored JSON does not decode is dead-lettered with the reason, and
// reported as an error matching keys.ErrCorrupt naming the jobs hash.
func (q *Queue[T]) decodeLeased(ctx context.Context, rows []any) ([]*Job[T], error) {
	const op = "dequeue"
	if len(rows)%8 != 0 {
		return nil, pkg.Fail(op, q.jobs, nil, fmt.Errorf("unexpected reply: %d values", len(rows)))
	}
	now := time.Now()
	out := make([]*Job[T], 0, len(rows)/8)
	var errs []error
	for i := 0; i < len(rows); i += 8 {
		r := rowReader{vals: rows[i : i+8]}
		id, dlv, retry, max, lvl, body, deadline, lastErr := r.str(0), r.int(1), r.int(2), r.int(3), r.str(4), r.str(5), r.int(6), r.str(7)
		if r.err != nil {
			return out, pkg.Fail(op, q.jobs, nil, r.err)
		}
		j := &Job[T]{Delivery: dlv, RetryCount: int(retry), LastError: lastErr, LeaseDeadline: msTime(deadline), delivered: now, q: q}
		if err := q.decodeBody(q.jobs, body, j); err != nil {
			// The job is leased: dead-letter it with the reason instead of
			// letting it loop.
			errs = append(errs, pkg.Fail(op, q.jobs, nil, fmt.Errorf("job %q: %w", id, err)))
			_, _ = q.settleDetached(ctx, "dequeue", []outcome{{op: 'd', id: id, dlv: dlv, err: "corrupt: " + err.Error()}})
			continue
		}
		j.ID = id
		j.MaxRetries = int(max)
		if p, ok := parseLevel(lvl); ok {
			j.Priority = p
		}
		out = append(out, j)
	}
	return out, errors.Join(errs...)
}

// TryDequeue leases the next ready job without waiting: the oldest High
// job, else the oldest Normal, else the oldest Low. Jobs whose lease
// expired are first returned to ready (counted as a failed attempt, or dead
// lettered after their last retry) in the same script, and jobs an
// existing producer pushed onto the wake-up list in the AI platform's
// item format are adopted (see "Reference layouts" in docs/queue.md). One
// round trip. With no ready job it returns ErrEmpty. A job whose stored data
// cannot be decoded is moved to the dead-letter list with the reason and
// reported (when no job is returned) as an error matching keys.ErrCorrupt
// that names the key, never as ErrEmpty. A request that go-redis resends
// after its reply was lost gets the first send's job back; if ctx ends
// while the reply is in flight, the job stays leased until its lease
// expires and then comes back (counted as a failed attempt): nothing is
// lost. With WithDurability, a job leased but whose lease fewer replicas
// acknowledged than asked is returned with an error matching
// ErrNotDurable: it is yours, but a failover may deliver it again.
func (q *Queue[T]) TryDequeue(ctx context.Context) (*Job[T], error) {
	jobs, _, err := q.dequeue(ctx, 1)
	if len(jobs) > 0 {
		return jobs[0], notDurable(err)
	}
	if err != nil {
		return nil, err
	}
	return nil, pkg.Fail("dequeue", q.levels[0], ErrEmpty, nil)
}

// Dequeue leases the next ready job, waiting until one is ready or ctx is
// done (then it returns ctx's error, wrapped). While idle it blocks on the
// queue's wake-up list, which an enqueue of a ready job signals when a
// consumer may be waiting (see "Ordering and the wake-up list" in
// docs/queue.md), for at most maxIdleWait
// between attempts, so jobs that become ready by delay or lease expiry are
// found too.
func (q *Queue[T]) Dequeue(ctx context.Context) (*Job[T], error) {
	for {
		jobs, wait, err := q.dequeue(ctx, 1)
		if len(jobs) > 0 {
			return jobs[0], notDurable(err) // as TryDequeue
		}
		if err != nil {
			return nil, err
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
// [1ms, maxIdleWait]). It moves what it takes to the inbox (BLMOVE)
// instead of popping it, so an element that is a job pushed in the seed's
// format is adopted by the next dequeue, never lost with a consumer.
func (q *Queue[T]) idle(ctx context.Context, wait time.Duration) error {
	const op = "dequeue"
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
		return pkg.Fail(op, q.wake, nil, err)
	}
	// BLMOVE with a fractional timeout (Redis >= 6.2); go-redis's BLMove
	// rounds anything under a second up to one.
	secs := strconv.FormatFloat(wait.Seconds(), 'f', 3, 64)
	var err error
	if q.o.seed {
		// WithSeedConsumers: the token list (the inbox) holds tokens,
		// popped; anything else there was moved by a consumer without the
		// option (during a switch) and goes back at once, for the next
		// dequeue to adopt.
		var v []any
		if v, err = q.run.Client().Do(ctx, "brpop", q.wake, secs).Slice(); err == nil && len(v) == 2 && v[1] != "1" {
			err = q.run.Client().RPush(context.WithoutCancel(ctx), q.wake, v[1]).Err()
		}
	} else {
		err = q.run.Client().Do(ctx, "blmove", q.wake, q.inbox, "right", "left", secs).Err()
	}
	switch {
	case err == nil, errors.Is(err, redis.Nil):
		return nil
	case ctx.Err() != nil:
		return pkg.Fail(op, q.wake, nil, ctx.Err())
	}
	// A broken connection (or a key of the wrong type): back off a little
	// and let the next dequeue report a persistent failure, naming the key.
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return pkg.Fail(op, q.wake, nil, ctx.Err())
	case <-t.C:
	}
	return nil
}

// rowReader type-checks the values of one reply row; the first failure is
// kept in err.
type rowReader struct {
	vals []any
	err  error
}

func (r *rowReader) str(i int) string {
	s, err := reply.String(r.vals[i])
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("row value %d: %w", i, err)
	}
	return s
}

func (r *rowReader) int(i int) int64 {
	n, err := reply.Int64(r.vals[i])
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("row value %d: %w", i, err)
	}
	return n
}
