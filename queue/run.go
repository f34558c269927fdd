package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Handler processes one job. Returning nil acks it; an error (or a panic,
// recovered) counts a failed attempt: retry with backoff, or the
// dead-letter list after the last retry. ctx is cancelled when the job's
// lease is lost (context.Cause is ErrLeaseLost) or when the shutdown
// grace period of Run ends.
type Handler[T any] func(ctx context.Context, j *Job[T]) error

// ErrShutdown is the cause of a handler context cancelled because Run's
// shutdown grace period ended. A handler that then returns an error has its
// job released (ready again, no attempt counted) rather than failed.
var ErrShutdown = errors.New("queue: shutting down")

// WithShutdownGrace sets how long Run lets running handlers finish after
// its context is cancelled (default 30 s) before cancelling their contexts.
func WithShutdownGrace(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.err = fmt.Errorf("%w: negative shutdown grace %v", ErrInvalid, d)
		}
		o.grace = d
	}
}

// WithErrorHandler receives the errors Run survives: Redis unreachable,
// a corrupt job dead-lettered, a failed ack (the job is then redelivered
// after its lease), outcomes refused because the lease was lost (matching
// ErrLeaseLost: the job was recovered, deleted or purged meanwhile). The
// default discards them. f must be safe for concurrent use.
func WithErrorHandler(f func(error)) Option {
	return func(o *options) { o.onError = f }
}

type runner[T any] struct {
	q        *Queue[T]
	h        Handler[T]
	prefetch int64

	jobs    chan *Job[T]
	results chan settleOp
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
//     written (or reported to WithErrorHandler).
//
// Jobs are leased in batches (one dequeue script for up to 2×concurrency
// jobs) and their outcomes written in batches (one settle script for all
// the outcomes ready at once), so a busy queue costs well under one round
// trip per job. Leases of fetched jobs are extended every third of the
// lease while they wait or run; a job whose lease is lost anyway (deleted,
// or not extended for a whole lease because Redis was unreachable: timed
// on the local clock from the last request that succeeded) has its
// context cancelled with cause ErrLeaseLost. Expired leases of crashed workers are recovered by every
// dequeue. Delivery is at-least-once: a job runs again if its worker
// crashes or its outcome cannot be written.
//
// Run returns ErrInvalid for a nil handler or concurrency < 1.
func (q *Queue[T]) Run(ctx context.Context, h Handler[T], concurrency int) error {
	if h == nil || concurrency < 1 {
		return fmt.Errorf("%w: Run needs a handler and concurrency >= 1 (got %d)", ErrInvalid, concurrency)
	}
	r := &runner[T]{q: q, h: h, prefetch: int64(2 * concurrency), freed: make(chan struct{}, 1), running: map[leaseKey]*lease{}}
	r.jobs = make(chan *Job[T], r.prefetch)
	r.results = make(chan settleOp, r.prefetch)
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

	r.fetchLoop(ctx)
	close(r.jobs)
	grace := time.AfterFunc(q.o.grace, func() { r.stopHdlr(ErrShutdown) })
	workers.Wait()
	grace.Stop()
	close(r.results)
	<-settled
	close(extDone)
	ext.Wait()
	return nil
}

func (q *Queue[T]) report(err error) {
	if err != nil && q.o.onError != nil {
		q.o.onError(err)
	}
}

func (r *runner[T]) fetchLoop(ctx context.Context) {
	q := r.q
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		free := r.prefetch - r.held.Load()
		if free <= 0 {
			select {
			case <-r.freed:
			case <-ctx.Done():
			}
			continue
		}
		n := min(free, 512)
		// The script runs with a context that a shutdown does not cancel,
		// so a reply is never dropped after the jobs were leased.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		sent := time.Now() // the lease runs from no earlier than this
		jobs, wait, err := q.dequeue(dctx, int(n))
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
		if len(jobs) == 0 {
			_ = q.idle(ctx, wait)
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
	}
}

func (r *runner[T]) take(j *Job[T]) *lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[leaseKey{j.ID, j.Delivery}]
}

func (r *runner[T]) work(ctx context.Context) {
	for j := range r.jobs {
		l := r.take(j)
		if ctx.Err() != nil || l == nil || l.ctx.Err() != nil {
			// Shutting down, or the lease ran out while the job waited:
			// give it back (a no-op if it is no longer ours).
			r.results <- settleOp{op: 'r', id: j.ID, dlv: j.Delivery}
			continue
		}
		start := time.Now()
		err := r.call(l.ctx, j)
		took := time.Since(start)
		switch {
		case err == nil:
			r.results <- settleOp{op: 'a', id: j.ID, dlv: j.Delivery, num: max(took.Microseconds(), 1)}
		case errors.Is(context.Cause(l.ctx), ErrShutdown):
			r.results <- settleOp{op: 'r', id: j.ID, dlv: j.Delivery}
		default:
			o := r.q.failOp(j, err)
			o.id, o.dlv = j.ID, j.Delivery
			r.results <- o
		}
	}
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
		batch := []settleOp{op}
	drain:
		for len(batch) < 512 {
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
		for attempt := 0; attempt < 3; attempt++ {
			if res, err = q.settleDetached(ctx, batch); err == nil {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
		}
		if err != nil {
			q.report(fmt.Errorf("%w (%d outcomes lost; those jobs run again after their lease)", err, len(batch)))
		} else {
			lost := 0
			for _, v := range res {
				if v == 0 {
					lost++
				}
			}
			if lost > 0 {
				q.report(fmt.Errorf("%w: %d of %d outcomes in queue %q not recorded (lease recovered or job deleted)", ErrLeaseLost, lost, len(batch), q.name))
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
		r.held.Add(-int64(len(batch)))
		select {
		case r.freed <- struct{}{}:
		default:
		}
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
		ops := make([]settleOp, 0, len(r.running))
		ls := make([]*lease, 0, len(r.running))
		for k, l := range r.running {
			if l.ctx.Err() != nil {
				// Lost, or told to stop at the end of the shutdown grace:
				// the job is no longer held.
				continue
			}
			ops = append(ops, settleOp{op: 'e', id: k.id, dlv: k.dlv, num: ms(q.o.lease)})
			ls = append(ls, l)
		}
		r.mu.Unlock()
		for len(ops) > 0 {
			n := min(len(ops), 512)
			c, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.o.lease/3)
			sent := time.Now()
			res, _, err := q.settle(c, ops[:n])
			cancel()
			if err != nil {
				q.report(err)
				break
			}
			for i, v := range res {
				if v == 0 {
					ls[i].cancel(ErrLeaseLost)
				} else {
					// Renewed from a server time no earlier than sent.
					ls[i].expire.Reset(time.Until(sent.Add(q.o.lease)))
				}
			}
			ops, ls = ops[n:], ls[n:]
		}
	}
}
