package queue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed cancel.lua
	cancelSrc string

	cancelOp, cancelEvOp = twin("cancel", cancelSrc, []*keys.Template{jobsKey, stateKey, priorityKey, priorityKey, priorityKey,
		activeKey, statsKey, cancelKey, doneKey, doneAtKey, replyKey, errorsKey, flowsKey, deadKey, wakeKey}, call.Uses(lib, call.Batched, call.JSONStr), call.Durable())
)

// Cancel stops the job with the given ID and reports the state it was in:
//
//   - Pending, Scheduled or Waiting (a flow's parent): it leaves the
//     queue now, counted in Stats.TotalCancelled (and kept as Cancelled
//     with WithRetention). A flow's child counts as dead for its parent
//     in the same step (EnqueueFlow's dead argument says what that does);
//     a waiting parent's children run on, as after Delete;
//   - Active: the handler running it under Run, in any process, has its
//     context cancelled with cause ErrCancelled at once: Cancel sets a
//     flag and publishes the ID on the queue's sharded channel
//     (SPUBLISH), which every Run subscribes to (SSUBSCRIBE); where
//     sharded pub/sub is missing (Redis before 7.0, miniredis) Run polls
//     the flags every 100 ms while handlers run, and a worker that
//     missed the message sees the flag at its next lease extension. When
//     the handler returns an error after that, the job leaves the queue
//     as cancelled (counted, kept as Cancelled), not retried; a handler
//     that returns nil has its job acked as usual. A consumer using
//     Dequeue learns of it from Extend (ErrCancelled) and settles the job
//     as it sees fit.
//
// A job with no live entry (done, dead or unknown) gives ErrNotFound. One
// script (one round trip); a resend reports the first outcome.
func (q *Queue[T]) Cancel(ctx context.Context, id string) (State, error) {
	const op = "cancel"
	if _, err := q.jobKey(op, id); err != nil {
		return "", err
	}
	rep, err := q.run.Run(ctx, q.pick(cancelOp, cancelEvOp), q.ev([]string{q.jobs, q.state, q.levels[0], q.levels[1], q.levels[2], q.active, q.stats,
		q.cancel, q.done, q.doneAt, q.request(), q.errors, q.flows, q.dead, q.wake}), id, q.cancels, unit.MsCeil(replayWindow), unit.MsCeil(q.o.retention),
		q.o.retainCap, q.o.events, q.o.deadCap, unit.MsCeil(deadTTL))
	nd, err := call.NotDurable(err)
	if err != nil {
		return "", err
	}
	if rep.Status == call.None {
		return "", pkg.Fail(op, q.jobs, ErrNotFound, fmt.Errorf("job %q", id))
	}
	s := State(rep.Str(0))
	if err := rep.Err(); err != nil {
		return "", err
	}
	if !s.valid() && s != Waiting {
		return "", pkg.Fail(op, q.jobs, nil, fmt.Errorf("unexpected reply: state %q", s))
	}
	return s, nd
}

// cancelPoll is how often Run reads the cancel flags of its running jobs
// when the server has no sharded pub/sub.
const cancelPoll = 100 * time.Millisecond

// watchCancels delivers Cancel's requests to a runner until done is
// closed, calling stop with the ID of each job Cancel asked to stop: it
// subscribes to the queue's cancel channel (one connection per Run), or,
// when SSUBSCRIBE fails, polls the cancel hash for the running jobs (ids
// lists them) every 100 ms.
func (q *Queue[T]) watchCancels(ctx context.Context, done <-chan struct{}, ids func() []string, stop func(id string)) {
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	ps := q.run.Client().SSubscribe(sctx, q.cancels)
	_, err := ps.Receive(sctx)
	cancel()
	if err == nil {
		defer ps.Close()
		msgs := ps.Channel(redis.WithChannelSize(64))
		for {
			select {
			case <-done:
				return
			case m, ok := <-msgs:
				if !ok {
					return
				}
				stop(m.Payload)
			}
		}
	}
	_ = ps.Close()
	t := time.NewTicker(cancelPoll)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		list := ids()
		if len(list) == 0 {
			continue
		}
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelPoll*5)
		vals, err := q.run.Client().HMGet(c, q.cancel, list...).Result()
		cancel()
		if err != nil {
			continue
		}
		for i, v := range vals {
			if v != nil {
				stop(list[i])
			}
		}
	}
}
