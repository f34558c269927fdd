package cache

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/autopipe"
)

// readPipe sends the plain read commands of concurrent fetches as shared
// pipelines (auto-pipelining, by internal/autopipe's Queue, which shares
// scripts' round trips the same way): at most lanes round trips in flight
// (shared by a cluster's masters, each always allowed one); a read made
// while nothing is in flight goes out at once, on the caller's goroutine
// and context; reads made meanwhile wait and leave together when a lane
// comes back. Each read's commands stay together in
// one pipeline, so a read is one round trip whatever the load. Reads are
// harmless to send twice (go-redis resends a pipeline whose connection
// broke).
type readPipe struct {
	rdb   redis.UniversalClient
	q     *autopipe.Queue[readJob] // nil: every read goes out alone
	pipes sync.Pool                // idle redis.Pipeliners (Exec empties one)
}

// maxReadCmds is the most commands one read sends.
const maxReadCmds = 3

// readJob is one read's commands; their replies land in them.
type readJob struct {
	cmds [maxReadCmds]redis.Cmder
	n    int
}

// newReadPipe returns a readPipe sharing pipelines with at most lanes
// round trips in flight (see autopipe.NewQueue); 0 sends every read alone.
func newReadPipe(rdb redis.UniversalClient, lanes int) *readPipe {
	p := &readPipe{rdb: rdb}
	if lanes > 0 {
		p.q = autopipe.NewQueue[readJob](rdb, lanes, p)
	}
	return p
}

// do sends cmds (at most maxReadCmds, all on key's slot) in one round
// trip and returns when each has its reply or error (nil), or when ctx
// ends (a read still queued is then never sent), or with the error of a
// panic in a shared pipeline.
func (p *readPipe) do(ctx context.Context, key string, cmds ...redis.Cmder) error {
	if p.q == nil {
		p.exec(ctx, cmds)
		return nil
	}
	var j readJob
	j.n = copy(j.cmds[:], cmds)
	_, err := p.q.Do(ctx, key, j)
	return err
}

// One sends a read alone (autopipe.Sender).
func (p *readPipe) One(ctx context.Context, j readJob) readJob {
	p.exec(ctx, j.cmds[:j.n])
	return j
}

// Many sends reads together in one pipeline (autopipe.Sender).
func (p *readPipe) Many(ctx context.Context, js []*readJob) {
	cmds := make([]redis.Cmder, 0, len(js)*maxReadCmds)
	for _, j := range js {
		cmds = append(cmds, j.cmds[:j.n]...)
	}
	p.exec(ctx, cmds)
}

// exec sends cmds as one pipeline; each command keeps its own error.
func (p *readPipe) exec(ctx context.Context, cmds []redis.Cmder) {
	pipe, _ := p.pipes.Get().(redis.Pipeliner)
	if pipe == nil {
		pipe = p.rdb.Pipeline()
	}
	_ = pipe.BatchProcess(ctx, cmds...)
	_, _ = pipe.Exec(ctx)
	p.pipes.Put(pipe)
}
