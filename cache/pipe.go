package cache

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// readPipe sends the plain read commands of concurrent fetches as shared
// pipelines (auto-pipelining), as internal/autopipe does for scripts: at
// most lanes round trips in flight per master; a read made while nothing
// is in flight goes out at once, on the caller's goroutine and context;
// reads made meanwhile wait and leave together, up to pipeBatch of them in
// one pipeline, when a lane comes back. Each read's commands stay together
// in one pipeline, so a read is one round trip whatever the load. Reads
// are harmless to send twice (go-redis resends a pipeline whose
// connection broke).
type readPipe struct {
	rdb     redis.UniversalClient
	cluster *redis.ClusterClient // rdb, when it is one
	lanes   int                  // 0: every read goes out alone
	one     pipeNode             // every read, unless on a cluster
	nodes   sync.Map             // cluster master address -> *pipeNode
	pipes   sync.Pool            // idle redis.Pipeliners (Exec empties one)
}

// pipeBatch is the most reads one shared pipeline carries.
const pipeBatch = 128

// maxReadCmds is the most commands one read sends.
const maxReadCmds = 4

type pipeNode struct {
	p     *readPipe
	mu    sync.Mutex
	queue []*pipeCall
	spare []*pipeCall // a sent batch's slice, reused as the next queue
	busy  int         // lanes in flight: a direct read or a drainer each
}

// pipeCall is one queued read and, once sent, its outcome.
type pipeCall struct {
	ctx   context.Context
	cmds  [maxReadCmds]redis.Cmder
	n     int
	state atomic.Int32
	err   error         // the pipeline's failure (a panic), else nil
	done  chan struct{} // receives once, when the commands have replies
}

// States of a queued read: a drainer takes it, or its caller stops
// waiting first (and it is never sent).
const (
	pipeQueued int32 = iota
	pipeTaken
	pipeAbandoned
)

var pipeCalls = sync.Pool{New: func() any { return &pipeCall{done: make(chan struct{}, 1)} }}

func newReadPipe(rdb redis.UniversalClient, lanes int) *readPipe {
	p := &readPipe{rdb: rdb, lanes: lanes}
	p.cluster, _ = rdb.(*redis.ClusterClient)
	p.one.p = p
	return p
}

// do sends cmds (at most maxReadCmds, all on key's slot) in one round
// trip and returns when each has its reply or error, or when ctx ends
// (a read still queued is then never sent).
func (p *readPipe) do(ctx context.Context, key string, cmds ...redis.Cmder) error {
	n := p.nodeFor(ctx, key)
	if p.lanes == 0 || n == nil {
		return p.exec(ctx, cmds)
	}
	n.mu.Lock()
	if n.busy == 0 {
		n.busy++
		n.mu.Unlock()
		defer n.release()
		return p.exec(ctx, cmds)
	}
	c := pipeCalls.Get().(*pipeCall)
	c.ctx, c.n = ctx, copy(c.cmds[:], cmds)
	c.state.Store(pipeQueued)
	n.queue = append(n.queue, c)
	// Open another lane only for a queue that makes a fair batch.
	start := n.busy < p.lanes && len(n.queue) >= n.busy
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
		if c.state.CompareAndSwap(pipeQueued, pipeAbandoned) {
			return ctx.Err() // still queued: the drainer skips it
		}
		select {
		case <-c.done:
			return c.outcome()
		default:
			return ctx.Err() // in flight: left to the garbage collector
		}
	}
}

// nodeFor returns the queue of key's master (the one queue off a
// cluster), or nil when the cluster cannot tell.
func (p *readPipe) nodeFor(ctx context.Context, key string) *pipeNode {
	if p.cluster == nil {
		return &p.one
	}
	m, err := p.cluster.MasterForKey(ctx, key)
	if err != nil {
		return nil
	}
	addr := m.Options().Addr
	if n, ok := p.nodes.Load(addr); ok {
		return n.(*pipeNode)
	}
	n, _ := p.nodes.LoadOrStore(addr, &pipeNode{p: p})
	return n.(*pipeNode)
}

// exec sends cmds as one pipeline; each command keeps its own error.
func (p *readPipe) exec(ctx context.Context, cmds []redis.Cmder) error {
	pipe, _ := p.pipes.Get().(redis.Pipeliner)
	if pipe == nil {
		pipe = p.rdb.Pipeline()
	}
	_ = pipe.BatchProcess(ctx, cmds...)
	_, _ = pipe.Exec(ctx)
	p.pipes.Put(pipe)
	return nil
}

func (c *pipeCall) outcome() error {
	err := c.err
	*c = pipeCall{done: c.done}
	pipeCalls.Put(c)
	return err
}

// release ends a direct read's use of its lane: the lane passes to a
// drainer if reads queued meanwhile, else it is free again.
func (n *pipeNode) release() {
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
func (n *pipeNode) drain() {
	var batch []*pipeCall
	for {
		n.mu.Lock()
		q := len(n.queue)
		if q == 0 {
			n.busy--
			n.mu.Unlock()
			return
		}
		if q <= pipeBatch {
			batch, n.queue, n.spare = n.queue, n.spare, nil
		} else {
			batch = append(batch[:0], n.queue[:pipeBatch]...)
			rest := copy(n.queue, n.queue[pipeBatch:])
			clear(n.queue[rest:])
			n.queue = n.queue[:rest]
		}
		n.mu.Unlock()
		n.p.send(batch)
		clear(batch)
		n.mu.Lock()
		if n.spare == nil && cap(batch) <= 4*pipeBatch {
			n.spare, batch = batch[:0], nil
		}
		n.mu.Unlock()
		// Let the callers just answered run first: most read again at
		// once, and join the next batch instead of trailing it.
		runtime.Gosched()
	}
}

// send runs one batch: the reads still wanted, as one pipeline. A panic
// (in a go-redis hook, say) becomes every undelivered read's error
// instead of ending the process from a goroutine no caller owns.
func (p *readPipe) send(batch []*pipeCall) {
	live := batch[:0] // filtered in place
	for _, c := range batch {
		if c.state.CompareAndSwap(pipeQueued, pipeTaken) {
			live = append(live, c)
		}
	}
	delivered := 0
	defer func() {
		if r := recover(); r != nil {
			for _, c := range live[delivered:] {
				c.err = fmt.Errorf("cache: panic in a shared pipeline: %v", r)
				c.done <- struct{}{}
			}
		}
	}()
	if len(live) == 0 {
		return
	}
	ctx, cancel := pipeContext(live)
	defer cancel()
	cmds := make([]redis.Cmder, 0, len(live)*maxReadCmds)
	for _, c := range live {
		cmds = append(cmds, c.cmds[:c.n]...)
	}
	_ = p.exec(ctx, cmds)
	for i, c := range live {
		c.done <- struct{}{}
		delivered = i + 1
	}
}

// pipeContext is the context of a shared pipeline: the first caller's
// values, no cancellation, and the latest of the callers' deadlines (none
// if a caller has none).
func pipeContext(calls []*pipeCall) (context.Context, context.CancelFunc) {
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
