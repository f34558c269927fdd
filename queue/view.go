package queue

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
)

// View is what an admin page shows of a queue: its Stats and the first
// jobs of some states.
type View[T any] struct {
	Stats Stats
	Jobs  map[State][]Info[T] // per state asked for, as List returns them
	Daily []DayStats          // the last 90 days, oldest first (Inspector.Summaries only)
}

// ReadView reads Stats and the first limit jobs (1..10,000) of each of
// states (List's states) together, in one pipeline of read-only scripts
// (a queue's keys share a slot: one round trip on a cluster too). A part
// that fails is left empty and its error joined to the one returned,
// with the others read. For admin tools, such as the dashboard's queue
// page; Inspector.Views reads many queues' views in one round trip.
func (q *Queue[T]) ReadView(ctx context.Context, limit int, states ...State) (View[T], error) {
	pipe := q.run.Client().Pipeline()
	done, err := q.queueView(ctx, pipe, limit, states...)
	if err != nil {
		return View[T]{}, err
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	return done()
}

// queueView adds ReadView's reads to pipe, a pipeline of the client the
// Queue was made with, and returns what decodes them once pipe has been
// executed. A bad state or limit fails before anything is queued; with no
// state only the stats are read. A read that cannot be decoded from pipe
// (the server lost the scripts, a slot migration) is sent again alone by
// the returned function.
func (q *Queue[T]) queueView(ctx context.Context, pipe redis.Pipeliner, limit int, states ...State) (func() (View[T], error), error) {
	const op = "read view"
	if len(states) > 0 && (limit < 1 || limit > maxList) {
		return nil, pkg.Invalidf(op, "limit %d (1..%d)", limit, maxList)
	}
	for _, s := range states {
		if !s.valid() || s == Cancelled {
			return nil, pkg.Invalidf(op, "state %q", s)
		}
	}
	stats := q.run.Queue(ctx, pipe, q.statsCall())
	lists := make([]func() (call.Reply, error), len(states))
	for i, s := range states {
		lists[i] = q.run.Queue(ctx, pipe, q.listCall(string(s), "0", limit))
	}
	return func() (View[T], error) {
		v := View[T]{Jobs: make(map[State][]Info[T], len(states))}
		errs := make([]error, 0, 1+len(states))
		if rep, err := stats(); err != nil {
			errs = append(errs, err)
		} else if v.Stats, err = q.decodeStats(&rep); err != nil {
			errs = append(errs, err)
		}
		for i, s := range states {
			rep, err := lists[i]()
			if err == nil {
				v.Jobs[s], err = q.decodeList(op, &rep)
			}
			errs = append(errs, err)
		}
		return v, errors.Join(errs...)
	}, nil
}
