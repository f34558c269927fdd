// Package autopipe runs script calls made concurrently by many goroutines
// as shared pipelines (auto-pipelining).
//
// A Group keeps at most lanes round trips in flight. A call made while
// nothing is in flight runs at once, alone, exactly as script.Run would
// (EVALSHA, then EVAL on NOSCRIPT), on the caller's goroutine and context.
// A call made while round trips are in flight waits in a queue: a new lane
// opens for the queue when a lane is free and the queue is at least as long
// as the number of lanes in flight; otherwise the next lane to come back
// sends everything waiting (up to MaxBatch calls) as one pipeline. Each call
// is still one round trip, and its script still runs atomically on the
// server; only the network reads and writes are shared, which on a loaded
// client and a loaded Redis cost more than a small script does.
//
// Under light load nothing changes: calls go out one by one, at once. Under
// heavy load from many goroutines the system calls per call fall several
// fold on both sides (see bench/RESULTS.md).
//
// A Group starts goroutines only while calls are queued, and they exit when
// the queue is empty: there is nothing to close.
package autopipe

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/script"
)

// MaxBatch is the most calls one pipeline carries.
const MaxBatch = 128

// Group coalesces concurrent script calls on one client. It is safe for
// concurrent use. Create it with New.
type Group struct {
	client redis.UniversalClient
	lanes  int

	mu    sync.Mutex
	queue []*call
	spare []*call // a drained batch's slice, reused as the next queue
	busy  int     // lanes in flight: a direct call or a drainer each
}

// New returns a Group keeping at most lanes round trips of client in
// flight; lanes below 1 count as 1.
func New(client redis.UniversalClient, lanes int) *Group {
	return &Group{client: client, lanes: max(lanes, 1)}
}

// call is one queued script call and, once sent, its outcome.
type call struct {
	ctx   context.Context
	s     *script.Script
	keys  []string
	args  []any
	state atomic.Int32
	val   any
	err   error
	done  chan struct{} // receives once, after val and err are set
}

// States of a queued call: a drainer takes it (and sends it), or its caller
// stops waiting first (and it is never sent).
const (
	queued int32 = iota
	taken
	abandoned
)

var calls = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// Run executes s with keys and args, alone or in a shared pipeline, and
// returns its reply. On a cluster client it is routed by keys[0]; every key
// must hash to that slot. args are read until Run returns; go-redis copies
// them into the command, so a shared read-only slice is fine.
//
// Cancellation: a call whose context ends while it waits in the queue
// returns the context's error and is never sent; one whose context ends
// after it was sent returns the context's error at once, and its script may
// still run, as with any command cancelled in flight. A shared pipeline
// runs with the first caller's context values, without cancellation,
// bounded by the latest deadline among its callers (none if one of them
// has none).
func (g *Group) Run(ctx context.Context, s *script.Script, keys []string, args ...any) (any, error) {
	g.mu.Lock()
	if g.busy == 0 {
		g.busy++
		g.mu.Unlock()
		v, err := s.Run(ctx, g.client, keys, args...).Result()
		g.release()
		return v, err
	}
	c := calls.Get().(*call)
	c.ctx, c.s, c.keys, c.args = ctx, s, keys, args
	c.state.Store(queued)
	g.queue = append(g.queue, c)
	// Open another lane only for a queue that would make a fair batch:
	// lanes opened for one call each would share nothing.
	start := g.busy < g.lanes && len(g.queue) >= g.busy
	if start {
		g.busy++
	}
	g.mu.Unlock()
	if start {
		go g.drain()
	}
	select {
	case <-c.done:
		return c.outcome()
	case <-ctx.Done():
		if c.state.CompareAndSwap(queued, abandoned) {
			return nil, ctx.Err() // still queued: it will be skipped
		}
		select {
		case <-c.done:
			return c.outcome()
		default:
			// In flight: its outcome will land in the buffered channel,
			// and the call is left to the garbage collector.
			return nil, ctx.Err()
		}
	}
}

// outcome returns a delivered call's reply and puts the call back in the
// pool.
func (c *call) outcome() (any, error) {
	v, err := c.val, c.err
	*c = call{done: c.done}
	calls.Put(c)
	return v, err
}

// release ends a direct call's use of its lane: the lane passes to a
// drainer if calls queued meanwhile, else it is free again.
func (g *Group) release() {
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.busy--
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	go g.drain()
}

// drain sends the queue, a batch at a time, until it is empty, then frees
// its lane.
func (g *Group) drain() {
	var batch []*call
	for {
		g.mu.Lock()
		n := len(g.queue)
		if n == 0 {
			g.busy--
			g.mu.Unlock()
			return
		}
		if n <= MaxBatch {
			// The queue becomes the batch; a drained batch's slice, the
			// queue.
			batch, g.queue, g.spare = g.queue, g.spare, nil
		} else {
			batch = append(batch[:0], g.queue[:MaxBatch]...)
			rest := copy(g.queue, g.queue[MaxBatch:])
			clear(g.queue[rest:])
			g.queue = g.queue[:rest]
		}
		g.mu.Unlock()
		g.send(batch)
		clear(batch)
		g.mu.Lock()
		if g.spare == nil && cap(batch) <= 4*MaxBatch {
			g.spare, batch = batch[:0], nil
		}
		g.mu.Unlock()
		// Let the callers just answered run first: most make their next
		// call at once, and it joins the next batch instead of trailing it.
		runtime.Gosched()
	}
}

// send runs one batch: the calls still wanted, as one pipeline of EVALSHA,
// then those whose script the server did not hold again, with EVAL.
func (g *Group) send(batch []*call) {
	live := batch[:0] // filtered in place
	for _, c := range batch {
		if c.state.CompareAndSwap(queued, taken) {
			live = append(live, c)
		}
	}
	switch len(live) {
	case 0:
		return
	case 1:
		c := live[0]
		c.val, c.err = c.s.Run(c.ctx, g.client, c.keys, c.args...).Result()
		c.done <- struct{}{}
		return
	}
	ctx, cancel := batchContext(live)
	defer cancel()
	cmds := make([]*redis.Cmd, len(live))
	pipe := g.client.Pipeline()
	for i, c := range live {
		cmds[i] = c.s.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	var again redis.Pipeliner
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			if again == nil {
				again = g.client.Pipeline()
			}
			c := live[i]
			cmds[i] = c.s.Eval(ctx, again, c.keys, c.args...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
	for i, c := range live {
		c.val, c.err = cmds[i].Result()
		c.done <- struct{}{}
	}
}

// batchContext is the context of a shared pipeline: the first caller's
// values, no cancellation, and the latest of the callers' deadlines (none
// if a caller has none).
func batchContext(calls []*call) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(calls[0].ctx)
	var latest time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}
