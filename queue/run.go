package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redschema/redschema/internal/unit"
)

// Handler processes one job. Returning nil acks it (with the result it
// set with j.SetResult, kept by WithRetention); an error (or a panic,
// recovered) counts a failed attempt: retry with backoff, or the
// dead-letter list after the last retry. ctx is cancelled when the job's
// lease is lost (context.Cause is ErrLeaseLost), when Cancel asks for the
// job to stop (ErrCancelled), or when the shutdown grace period of Run
// ends (ErrShutdown); it ends with the job's WithTimeout, if any.
type Handler[T any] func(ctx context.Context, j *Job[T]) error

// maxConcurrency bounds Run's concurrency.
const maxConcurrency = 10000

type runner[T any] struct {
	q        *Queue[T]
	h        Handler[T]
	prefetch int64

	jobs    chan *Job[T]
	results chan outcome
	held    atomic.Int64
	freed   chan struct{}

	hctx     context.Context // parent of handler contexts
	stopHdlr context.CancelCauseFunc

	mu      sync.Mutex
	running map[leaseKey]*lease
}

// leaseKey names one delivery: the same job ID can be held twice by one
// runner (a lease lost while Redis was unreachable, then the job fetched
// again), under different delivery tokens.
type leaseKey struct {
	id  string
	dlv int64
}

type lease struct {
	cancel context.CancelCauseFunc
	ctx    context.Context
	// expire cancels ctx with ErrLeaseLost when the lease runs out on the
	// local clock without a successful extension (Redis unreachable): by
	// then another consumer may hold the job.
	expire *time.Timer
}

// Run consumes the queue with concurrency handlers until ctx is done, then
// shuts down gracefully and returns nil:
//
//   - fetching stops at once; jobs fetched but not started are released
//     (ready again, no attempt counted);
//   - running handlers get the grace period (WithShutdownGrace) to finish;
//     then their contexts are cancelled with cause ErrShutdown and their
//     leases are no longer extended (a handler that ignores its context
//     loses its job to another consumer once the lease runs out);
//   - Run returns after every handler has returned and every outcome is
//     written (or its error reported).
//
// Jobs are leased in batches (one dequeue script for up to 2×concurrency
// jobs waiting or running; the next batch is fetched once half of those
// slots are free, a slot freeing when its handler returns) and their
// outcomes written in batches (one settle script for all the outcomes
// ready at once, while the next fetch is in flight), so a busy queue costs
// well under one round trip per job. Leases of fetched jobs are extended every third of the
// lease while they wait or run; a job whose lease is lost anyway (deleted,
// or not extended for a whole lease because Redis was unreachable: timed
// on the local clock from the last request that succeeded) has its
// context cancelled with cause ErrLeaseLost. Expired leases of crashed workers are recovered by every
// dequeue. Delivery is at-least-once: a job runs again if its worker
// crashes or its outcome cannot be written.
//
// The handler is wrapped in the queue's middleware (WithMiddleware).
//
// The errors Run survives (Redis unreachable, a failed ack, an outcome
// refused because the lease was lost: see WithErrorHandler) are logged
// with log/slog's default logger, with the queue's name, unless
// WithErrorHandler receives them instead. Run keeps going through them.
//
// Run returns ErrInvalid for a nil handler or a concurrency outside
// [1, 10000].
func (q *Queue[T]) Run(ctx context.Context, h Handler[T], concurrency int) error {
	if h == nil || concurrency < 1 || concurrency > maxConcurrency {
		return pkg.Invalidf("run", "Run needs a handler and a concurrency in [1, %d] (got %d)", maxConcurrency, concurrency)
	}
	for i := len(q.middleware) - 1; i >= 0; i-- {
		if h = q.middleware[i](h); h == nil {
			return pkg.Invalidf("run", "middleware %d returned a nil handler", i)
		}
	}
	r := &runner[T]{q: q, h: h, prefetch: int64(2 * concurrency), freed: make(chan struct{}, 1), running: map[leaseKey]*lease{}}
	r.jobs = make(chan *Job[T], r.prefetch)
	r.results = make(chan outcome, r.prefetch)
	r.hctx, r.stopHdlr = context.WithCancelCause(context.WithoutCancel(ctx))
	defer r.stopHdlr(nil)

	var workers sync.WaitGroup
	for i := 0; i < concurrency; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			r.work(ctx)
		}()
	}
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		r.settleLoop(ctx)
	}()
	extDone := make(chan struct{})
	var ext sync.WaitGroup
	ext.Add(1)
	go func() {
		defer ext.Done()
		r.extendLoop(ctx, extDone)
	}()

	watchDone := make(chan struct{})
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		q.watchCancels(ctx, watchDone, r.runningIDs, r.stop)
	}()

	r.fetchLoop(ctx)
	close(r.jobs)
	grace := time.AfterFunc(q.o.grace, func() { r.stopHdlr(ErrShutdown) })
	workers.Wait()
	grace.Stop()
	close(r.results)
	<-settled
	close(extDone)
	close(watchDone)
	ext.Wait()
	watch.Wait()
	return nil
}

// runningIDs lists the IDs of the jobs the runner holds.
func (r *runner[T]) runningIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.running))
	for k := range r.running {
		out = append(out, k.id)
	}
	return out
}

// stop cancels the handler contexts of job id (Cancel).
func (r *runner[T]) stop(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, l := range r.running {
		if k.id == id {
			l.cancel(ErrCancelled)
		}
	}
}

// report passes an error that Run or RunSchedules survived to the
// WithErrorHandler function or, without one, to slog.Default: at level
// Warn for outcomes that were written late or not at all because the
// lease had moved on (ErrLeaseLost, ErrNotDurable), Error otherwise.
func (q *Queue[T]) report(err error) {
	switch {
	case err == nil:
	case q.o.onError != nil:
		q.o.onError(err)
	default:
		level := slog.LevelError
		if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotDurable) {
			level = slog.LevelWarn
		}
		slog.Default().LogAttrs(context.Background(), level, "queue: worker error", slog.String("queue", q.name), slog.Any("err", err))
	}
}

func (r *runner[T]) fetchLoop(ctx context.Context) {
	q := r.q
	pause := 50 * time.Millisecond
	readInbox := true // at the start, and after each wait on the wake list
	for ctx.Err() == nil {
		// Fetch once half the slots are free (or all are: an idle
		// runner), so that each fetch is a batch, not one job per
		// finished handler; the other half keeps the handlers busy
		// meanwhile.
		held := r.held.Load()
		free := r.prefetch - held
		if free <= 0 || (free < (r.prefetch+1)/2 && held > 0) {
			select {
			case <-r.freed:
			case <-ctx.Done():
			}
			continue
		}
		n := min(free, maxFetch)
		// The script runs with a context that a shutdown does not cancel,
		// so a reply is never dropped after the jobs were leased.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		sent := time.Now() // the lease runs from no earlier than this
		jobs, wait, err := q.fetch(dctx, int(n), readInbox)
		cancel()
		q.report(err)
		if len(jobs) == 0 && err != nil {
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 50 * time.Millisecond
		readInbox = false
		if len(jobs) == 0 {
			_ = q.idle(ctx, wait)
			readInbox = true
			continue
		}
		r.held.Add(int64(len(jobs)))
		r.mu.Lock()
		for _, j := range jobs {
			l := &lease{}
			l.ctx, l.cancel = context.WithCancelCause(r.hctx)
			cancel := l.cancel
			l.expire = time.AfterFunc(time.Until(sent.Add(q.o.lease)), func() { cancel(ErrLeaseLost) })
			r.running[leaseKey{j.ID, j.Delivery}] = l
		}
		r.mu.Unlock()
		for _, j := range jobs {
			r.jobs <- j // never blocks: held <= prefetch = cap
		}
		if q.limits != "" && len(jobs) < int(n) {
			// Limits held the rest back (or nothing more was ready): a
			// fetch now would read the ready set again for nothing (with
			// group limits, up to groupScan job bodies). Wait for a
			// wake-up, which an enqueue or a settle that frees a place
			// pushes, at most maxIdleWait.
			_ = q.idle(ctx, wait)
			readInbox = true
		}
	}
}

func (r *runner[T]) take(j *Job[T]) *lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[leaseKey{j.ID, j.Delivery}]
}

func (r *runner[T]) work(ctx context.Context) {
	for j := range r.jobs {
		r.results <- r.handle(ctx, j)
		// The job's outcome is in the settle loop's hands: its slot is
		// free for the next fetch, which then overlaps the settle's round
		// trip instead of following it.
		r.held.Add(-1)
		select {
		case r.freed <- struct{}{}:
		default:
		}
	}
}

// handle runs the handler on j and returns its outcome.
func (r *runner[T]) handle(ctx context.Context, j *Job[T]) outcome {
	l := r.take(j)
	if l != nil && errors.Is(context.Cause(l.ctx), ErrCancelled) {
		// Cancelled while it waited: it never runs.
		return outcome{op: 'c', id: j.ID, dlv: j.Delivery}
	}
	if ctx.Err() != nil || l == nil || l.ctx.Err() != nil {
		// Shutting down, or the lease ran out while the job waited:
		// give it back (a no-op if it is no longer ours).
		return outcome{op: 'r', id: j.ID, dlv: j.Delivery}
	}
	hctx := l.ctx
	if j.Timeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(hctx, j.Timeout)
		defer cancel()
	}
	start := time.Now()
	err := r.call(hctx, j)
	took := time.Since(start)
	switch {
	case err == nil:
		return outcome{op: 'a', id: j.ID, dlv: j.Delivery, num: max(took.Microseconds(), 1), err: string(j.result)}
	case errors.Is(context.Cause(l.ctx), ErrShutdown):
		return outcome{op: 'r', id: j.ID, dlv: j.Delivery}
	case errors.Is(context.Cause(l.ctx), ErrCancelled):
		return outcome{op: 'c', id: j.ID, dlv: j.Delivery}
	}
	o := r.q.failOutcome(j, err)
	o.id, o.dlv = j.ID, j.Delivery
	return o
}

func (r *runner[T]) call(ctx context.Context, j *Job[T]) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return r.h(ctx, j)
}

func (r *runner[T]) settleLoop(ctx context.Context) {
	q := r.q
	for op := range r.results {
		batch := []outcome{op}
	drain:
		for len(batch) < maxSettle {
			select {
			case o, ok := <-r.results:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		var (
			res []int64
			err error
		)
		// One request, resent as it is: an attempt whose reply was lost
		// after the script ran is reported by the next with its first
		// results.
		req := q.request()
		for attempt := 0; attempt < 3; attempt++ {
			c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			res, _, err = q.settle(c, "settle", req, batch)
			cancel()
			if res != nil { // written (err is nil or ErrNotDurable)
				break
			}
			time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
		}
		if res == nil {
			q.report(fmt.Errorf("%w (%d outcomes lost; those jobs run again after their lease)", err, len(batch)))
		} else {
			if err != nil {
				q.report(err) // ErrNotDurable: written, not yet on enough replicas
			}
			lost := 0
			for _, v := range res {
				if v == settleLost {
					lost++
				}
			}
			if lost > 0 {
				q.report(pkg.Fail("settle", q.active, ErrLeaseLost, fmt.Errorf("%d of %d outcomes not recorded (lease recovered or job deleted)", lost, len(batch))))
			}
		}
		r.mu.Lock()
		for _, o := range batch {
			k := leaseKey{o.id, o.dlv}
			if l := r.running[k]; l != nil {
				l.expire.Stop()
				l.cancel(nil)
				delete(r.running, k)
			}
		}
		r.mu.Unlock()
	}
}

func (r *runner[T]) extendLoop(ctx context.Context, done <-chan struct{}) {
	q := r.q
	t := time.NewTicker(q.o.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		r.mu.Lock()
		ops := make([]outcome, 0, len(r.running))
		ls := make([]*lease, 0, len(r.running))
		for k, l := range r.running {
			if l.ctx.Err() != nil && !errors.Is(context.Cause(l.ctx), ErrCancelled) {
				// Lost, or told to stop at the end of the shutdown grace:
				// the job is no longer held. (A cancelled job is held
				// until its handler returns.)
				continue
			}
			ops = append(ops, outcome{op: 'e', id: k.id, dlv: k.dlv, num: unit.MsCeil(q.o.lease)})
			ls = append(ls, l)
		}
		r.mu.Unlock()
		for len(ops) > 0 {
			n := min(len(ops), maxSettle)
			c, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.o.lease/3)
			sent := time.Now()
			res, _, err := q.settle(c, "extend", q.request(), ops[:n])
			cancel()
			if err != nil {
				q.report(err)
			}
			if res == nil {
				break
			}
			for i, v := range res {
				if v == settleLost {
					ls[i].cancel(ErrLeaseLost)
				} else {
					if v == settleCancelled {
						ls[i].cancel(ErrCancelled) // a Cancel whose message was missed
					}
					// Renewed from a server time no earlier than sent.
					ls[i].expire.Reset(time.Until(sent.Add(q.o.lease)))
				}
			}
			ops, ls = ops[n:], ls[n:]
		}
	}
}
