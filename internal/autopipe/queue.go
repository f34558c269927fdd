package autopipe

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxBatch is the most jobs one pipeline carries.
const MaxBatch = 128

// Queue coalesces the concurrent jobs of type J made on one client into
// shared round trips, as the package doc describes: at most lanes round
// trips in flight (on a cluster, in all, but one per master always
// allowed), a job made while nothing is in flight on its server sent at
// once on its caller's goroutine and context, jobs made meanwhile sent
// together by the next lane to come back. What a job is and how a batch
// of them goes out is the sender's: Group sends scripts, the cache package
// plain reads. It is safe for concurrent use; create it with NewQueue.
type Queue[J any] struct {
	client  redis.UniversalClient
	cluster *redis.ClusterClient // client, when it is one
	lanes   int
	busy    atomic.Int32 // lanes in flight on every node
	s       Sender[J]
	one     node[J]  // every job, unless on a cluster
	nodes   sync.Map // cluster master address -> *node[J]
	calls   sync.Pool
}

// Sender sends jobs and stores each one's outcome in it.
type Sender[J any] interface {
	// One sends a job alone, with its caller's context, and returns it
	// with its outcome.
	One(ctx context.Context, job J) J
	// Many sends jobs (two or more) in one round trip, with the batch's
	// context: the first caller's values, no cancellation, the latest of
	// the callers' deadlines (none if one of them has none).
	Many(ctx context.Context, jobs []*J)
}

// node is the lanes and the queue of one server.
type node[J any] struct {
	q     *Queue[J]
	mu    sync.Mutex
	queue []*call[J]
	spare []*call[J] // a drained batch's slice, reused as the next queue
	busy  int        // lanes in flight: a direct job or a drainer each
}

// call is one queued job and, once sent, its outcome.
type call[J any] struct {
	ctx   context.Context
	job   J
	state atomic.Int32
	err   error         // the sender's panic, else nil
	done  chan struct{} // receives once, when the job has its outcome
}

// States of a queued call: a drainer takes it (and sends it), or its caller
// stops waiting first (and it is never sent).
const (
	queued int32 = iota
	taken
	abandoned
)

// NewQueue returns a Queue keeping at most lanes round trips of client in
// flight (on a cluster: in all, but each master may always have one);
// lanes below 1 count as 1.
func NewQueue[J any](client redis.UniversalClient, lanes int, s Sender[J]) *Queue[J] {
	q := &Queue[J]{client: client, lanes: max(lanes, 1), s: s}
	q.cluster, _ = client.(*redis.ClusterClient)
	q.one.q = q
	q.calls.New = func() any { return &call[J]{done: make(chan struct{}, 1)} }
	return q
}

// Do sends job, alone or in a shared pipeline, and returns it with its
// outcome. On a cluster client it is routed by key, which must hash to
// the slot of every key the job addresses; with no key, or a cluster that
// cannot tell key's master, the job goes out alone.
//
// Cancellation: a job whose context ends while it waits in the queue
// returns the context's error and is never sent; one whose context ends
// after it was sent returns the context's error at once, and may still
// run on the server, as any command cancelled in flight. A panic in the
// sender while it sends a batch becomes the error of every job of the
// batch not yet answered.
func (q *Queue[J]) Do(ctx context.Context, key string, job J) (J, error) {
	n := q.nodeFor(ctx, key)
	if n == nil {
		return q.s.One(ctx, job), nil
	}
	n.mu.Lock()
	if n.busy == 0 {
		n.open()
		n.mu.Unlock()
		defer n.release()
		return q.s.One(ctx, job), nil
	}
	c := q.calls.Get().(*call[J])
	c.ctx, c.job = ctx, job
	c.state.Store(queued)
	n.queue = append(n.queue, c)
	// Open another lane only for a queue that would make a fair batch:
	// lanes opened for one job each would share nothing. On a cluster
	// the lanes are the Queue's, not each master's: per master they would
	// split the same calls into batches a third the size on 3 masters.
	start := len(n.queue) >= n.busy && int(q.busy.Load()) < q.lanes
	if start {
		n.open()
	}
	n.mu.Unlock()
	if start {
		go n.drain()
	}
	var zero J
	select {
	case <-c.done:
		return q.outcome(c)
	case <-ctx.Done():
		if c.state.CompareAndSwap(queued, abandoned) {
			return zero, ctx.Err() // still queued: it will be skipped
		}
		select {
		case <-c.done:
			return q.outcome(c)
		default:
			// In flight: its outcome will land in the buffered channel,
			// and the call is left to the garbage collector.
			return zero, ctx.Err()
		}
	}
}

// nodeFor returns the node that serves key: the Queue's one node, or on a
// cluster the node of the master that owns key (nil if the cluster cannot
// tell, or there is no key).
func (q *Queue[J]) nodeFor(ctx context.Context, key string) *node[J] {
	if q.cluster == nil {
		return &q.one
	}
	if key == "" {
		return nil
	}
	m, err := q.cluster.MasterForKey(ctx, key)
	if err != nil {
		return nil
	}
	addr := m.Options().Addr
	if n, ok := q.nodes.Load(addr); ok {
		return n.(*node[J])
	}
	n, _ := q.nodes.LoadOrStore(addr, &node[J]{q: q})
	return n.(*node[J])
}

// outcome returns a delivered call's job and error and puts the call back
// in the pool.
func (q *Queue[J]) outcome(c *call[J]) (J, error) {
	job, err := c.job, c.err
	*c = call[J]{done: c.done}
	q.calls.Put(c)
	return job, err
}

// release ends a direct job's use of its lane: the lane passes to a
// drainer if jobs queued meanwhile, else it is free again.
func (n *node[J]) release() {
	n.mu.Lock()
	if len(n.queue) == 0 {
		n.close()
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	go n.drain()
}

// open takes a lane of the node's (n.mu held).
func (n *node[J]) open() {
	n.busy++
	n.q.busy.Add(1)
}

// close frees a lane of the node's (n.mu held).
func (n *node[J]) close() {
	n.busy--
	n.q.busy.Add(-1)
}

// drain sends the queue, a batch at a time, until it is empty, then frees
// its lane.
func (n *node[J]) drain() {
	var batch []*call[J]
	for {
		n.mu.Lock()
		q := len(n.queue)
		if q == 0 {
			n.close()
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
		n.q.send(batch)
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

// send sends one batch: the jobs still wanted, alone (with the caller's
// context) or as one pipeline. A panic (in a go-redis hook, say) becomes
// every undelivered job's error instead of ending the process from a
// goroutine no caller owns.
func (q *Queue[J]) send(batch []*call[J]) {
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
				c.err = fmt.Errorf("autopipe: panic in a shared pipeline: %v", r)
				c.done <- struct{}{}
			}
		}
	}()
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].job = q.s.One(live[0].ctx, live[0].job)
	default:
		ctx, cancel := batchContext(live)
		defer cancel()
		jobs := make([]*J, len(live))
		for i, c := range live {
			jobs[i] = &c.job
		}
		q.s.Many(ctx, jobs)
	}
	for i, c := range live {
		c.done <- struct{}{}
		delivered = i + 1
	}
}

// batchContext is the context of a shared pipeline: the first caller's
// values, no cancellation, and the latest of the callers' deadlines (none
// if a caller has none).
func batchContext[J any](calls []*call[J]) (context.Context, context.CancelFunc) {
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
