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
// On a Redis Cluster the lanes and the queue are per master (found from the
// call's first key), so a slow or unreachable master holds up only the
// calls bound for it.
//
// A Group starts goroutines only while calls are queued, and they exit when
// the queue is empty: there is nothing to close.
//
// Faults: when a connection breaks in the middle of a pipeline, go-redis
// sends the whole pipeline again (up to the client's MaxRetries), so the
// scripts of a batch that had already run can run twice; a single command
// has the same exposure in a narrower window. Scripts meant for shared
// pipelines should be harmless to repeat, or the client should have
// MaxRetries: -1.
package autopipe

import (
	"context"
	"fmt"
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
	client  redis.UniversalClient
	cluster *redis.ClusterClient // client, when it is one
	lanes   int
	one     node     // every call, unless on a cluster
	nodes   sync.Map // cluster master address -> *node
}

// node is the lanes and the queue of one server.
type node struct {
	g     *Group
	mu    sync.Mutex
	queue []*call
	spare []*call // a drained batch's slice, reused as the next queue
	busy  int     // lanes in flight: a direct call or a drainer each
}

// New returns a Group keeping at most lanes round trips of client in
// flight (per master on a cluster); lanes below 1 count as 1.
func New(client redis.UniversalClient, lanes int) *Group {
	g := &Group{client: client, lanes: max(lanes, 1)}
	g.cluster, _ = client.(*redis.ClusterClient)
	g.one.g = g
	return g
}

// nodeFor returns the node that serves keys: the Group's one node, or on a
// cluster the node of the master that owns keys[0] (nil if the cluster
// cannot tell).
func (g *Group) nodeFor(ctx context.Context, keys []string) *node {
	if g.cluster == nil || len(keys) == 0 {
		return &g.one
	}
	m, err := g.cluster.MasterForKey(ctx, keys[0])
	if err != nil {
		return nil
	}
	addr := m.Options().Addr
	if n, ok := g.nodes.Load(addr); ok {
		return n.(*node)
	}
	n, _ := g.nodes.LoadOrStore(addr, &node{g: g})
	return n.(*node)
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
// must hash to that slot. keys and args must not change until the call is
// done, which can be after Run returned on a cancelled context; a shared
// read-only slice is fine (go-redis copies them into the command).
//
// Cancellation: a call whose context ends while it waits in the queue
// returns the context's error and is never sent; one whose context ends
// after it was sent returns the context's error at once, and its script may
// still run, as with any command cancelled in flight. A shared pipeline
// runs with the first caller's context values, without cancellation,
// bounded by the latest deadline among its callers (none if one of them
// has none).
func (g *Group) Run(ctx context.Context, s *script.Script, keys []string, args ...any) (any, error) {
	n := g.nodeFor(ctx, keys)
	if n == nil {
		return s.Run(ctx, g.client, keys, args...).Result()
	}
	return n.run(ctx, s, keys, args)
}

func (n *node) run(ctx context.Context, s *script.Script, keys []string, args []any) (any, error) {
	n.mu.Lock()
	if n.busy == 0 {
		n.busy++
		n.mu.Unlock()
		defer n.release()
		return s.Run(ctx, n.g.client, keys, args...).Result()
	}
	c := calls.Get().(*call)
	c.ctx, c.s, c.keys, c.args = ctx, s, keys, args
	c.state.Store(queued)
	n.queue = append(n.queue, c)
	// Open another lane only for a queue that would make a fair batch:
	// lanes opened for one call each would share nothing.
	start := n.busy < n.g.lanes && len(n.queue) >= n.busy
	if start {
		n.busy++
	}
	n.mu.Unlock()
	if start {
		go n.drain()
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
func (n *node) release() {
	n.mu.Lock()
	if len(n.queue) == 0 {
		n.busy--
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	go n.drain()
}

// drain sends the queue, a batch at a time, until it is empty, then frees
// its lane.
func (n *node) drain() {
	var batch []*call
	for {
		n.mu.Lock()
		q := len(n.queue)
		if q == 0 {
			n.busy--
			n.mu.Unlock()
			return
		}
		if q <= MaxBatch {
			// The queue becomes the batch; a drained batch's slice, the
			// queue.
			batch, n.queue, n.spare = n.queue, n.spare, nil
		} else {
			batch = append(batch[:0], n.queue[:MaxBatch]...)
			rest := copy(n.queue, n.queue[MaxBatch:])
			clear(n.queue[rest:])
			n.queue = n.queue[:rest]
		}
		n.mu.Unlock()
		n.g.send(batch)
		clear(batch)
		n.mu.Lock()
		if n.spare == nil && cap(batch) <= 4*MaxBatch {
			n.spare, batch = batch[:0], nil
		}
		n.mu.Unlock()
		// Let the callers just answered run first: most make their next
		// call at once, and it joins the next batch instead of trailing it.
		runtime.Gosched()
	}
}

// send runs one batch: the calls still wanted, as one pipeline of EVALSHA,
// then those whose script the server did not hold again, with EVAL. A panic
// (in a go-redis hook, say) becomes every undelivered call's error instead
// of ending the process from a goroutine no caller owns.
func (g *Group) send(batch []*call) {
	live := batch[:0] // filtered in place
	for _, c := range batch {
		if c.state.CompareAndSwap(queued, taken) {
			live = append(live, c)
		}
	}
	delivered := 0
	defer func() {
		if r := recover(); r != nil {
			for _, c := range live[delivered:] {
				c.val, c.err = nil, fmt.Errorf("autopipe: panic in a shared pipeline: %v", r)
				c.done <- struct{}{}
			}
		}
	}()
	switch len(live) {
	case 0:
		return
	case 1:
		c := live[0]
		c.val, c.err = c.s.Run(c.ctx, g.client, c.keys, c.args...).Result()
		c.done <- struct{}{}
		delivered = 1
		return
	}
	ctx, cancel := batchContext(live)
	defer cancel()
	calls := make([]script.Call, len(live))
	for i, c := range live {
		calls[i] = script.Call{S: c.s, Keys: c.keys, Args: c.args}
	}
	cmds := script.Pipeline(ctx, g.client, calls)
	for i, c := range live {
		c.val, c.err = cmds[i].Result()
		c.done <- struct{}{}
		delivered = i + 1
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
