package sweep

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redschema/redschema/internal/call"
)

// Load loads ops on every master of run's client unless loaded is set,
// and then sets it: a sweep pipelines its scripts, and a pipeline falls
// back to EVAL with the body for each call whose script the server
// lacks, so a sweeper loads them once instead. It returns the first
// failed Load, leaving loaded unset.
func Load(ctx context.Context, run *call.Runner, loaded *atomic.Bool, ops ...*call.Op) error {
	if loaded.Load() {
		return nil
	}
	for _, o := range ops {
		if err := o.Load(ctx, run.Client()); err != nil {
			return err
		}
	}
	loaded.Store(true)
	return nil
}

// Due runs the due phase of a sweep of the batch [first, first+count) of
// a ring of n slots (wrapping after n-1): one call per slot, built by
// build, all sent with run.RunMany (one pipeline; one per node, in
// parallel, on a cluster). For each slot, in order, whose call succeeded
// it decodes the reply with decode (e.g. into the members due in that
// slot) and, unless the reply is then in error, passes each value to
// each, in order.
//
// A build error is returned at once, before anything runs. Otherwise Due
// returns the first error, in slot order, of the calls, of their
// decoding and of each; every slot and value is visited all the same.
func Due[T any](ctx context.Context, run *call.Runner, n, first, count int,
	build func(slot int) (call.Call, error), decode func(r *call.Reply) []T, each func(v T) error) error {
	calls := make([]call.Call, count)
	for i := range calls {
		c, err := build((first + i) % n)
		if err != nil {
			return err
		}
		calls[i] = c
	}
	return runEach(ctx, run, calls, decode, each)
}

// Count runs calls (a sweep's visits of what Due found) with run.RunMany
// and adds up the integer each reply starts with (what a visit
// announced). It returns the total over the calls that succeeded and the
// first error, in call order.
func Count(ctx context.Context, run *call.Runner, calls []call.Call) (int, error) {
	n := 0
	err := runEach(ctx, run, calls, Int, func(m int64) error { n += int(m); return nil })
	return n, err
}

// Members decodes a due script's reply whose payload is a list of
// members (Reply.Strs(0)): a decode for Due.
func Members(r *call.Reply) []string { return r.Strs(0) }

// Int decodes a reply whose payload starts with an integer (Reply.Int(0))
// as a one-value list: a decode for Due.
func Int(r *call.Reply) []int64 { return []int64{r.Int(0)} }

// runEach runs calls with run.RunMany and, in call order, passes each
// value decode makes of a reply that is not in error to each; it returns
// the first error of the calls, their replies and each.
func runEach[T any](ctx context.Context, run *call.Runner, calls []call.Call,
	decode func(r *call.Reply) []T, each func(v T) error) error {
	reps, errs := run.RunMany(ctx, calls)
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for i := range reps {
		if errs[i] != nil {
			keep(errs[i])
			continue
		}
		vs := decode(&reps[i])
		if err := reps[i].Err(); err != nil {
			keep(err)
			continue
		}
		for _, v := range vs {
			keep(each(v))
		}
	}
	return first
}

// Run is the body of a package's RunSweeper: it checks every and batch
// against window for a ring of n slots (see Check; else p's invalid-input
// error for op), then runs sweep with Loop until ctx is done and returns
// ctx.Err() as p's error for op.
func Run(ctx context.Context, p *call.Pkg, op string, n int, every time.Duration, batch int, window time.Duration,
	sweep func(ctx context.Context, first, count int) (int, error), onError func(error)) error {
	if why := Check(n, every, batch, window); why != "" {
		return p.Invalidf(op, "%s", why)
	}
	return p.Fail(op, "", nil, Loop(ctx, n, every, batch, sweep, onError))
}
