package cache

import (
	"context"
	"errors"
	"fmt"
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

// txPipe sends the commands of concurrent untagged Sets, each Set's in
// one MULTI/EXEC (atomic, as the write script would be), as shared
// pipelines on its own lanes (see readPipe): a Set reads nothing before
// it writes, and a transaction of plain commands costs Redis about half
// the write script (bench/README.md, docs/cache.md). On one server (or a
// Ring shard) a batch is one transaction; on a cluster, whose
// transactions must stay on one slot, each Set is its own MULTI/EXEC in
// the master's pipeline. A Set whose transaction failed is sent again
// through the write script (see Store.set), which the Runner retries
// through migrations and failovers.
type txPipe struct {
	rdb     redis.UniversalClient
	cluster *redis.ClusterClient // rdb, when it is one
	q       *autopipe.Queue[txJob]
}

// maxTxCmds is the most commands one Set sends.
const maxTxCmds = 5

// txJob is one Set's commands (all on key's slot) and its outcome.
type txJob struct {
	key  string
	cmds [maxTxCmds]*redis.Cmd
	n    int
	err  error
}

func newTxPipe(rdb redis.UniversalClient, lanes int) *txPipe {
	p := &txPipe{rdb: rdb}
	p.cluster, _ = rdb.(*redis.ClusterClient)
	if lanes > 0 {
		p.q = autopipe.NewQueue[txJob](rdb, lanes, p)
	}
	return p
}

// do sends cmds (at most maxTxCmds, all on key's slot) as one MULTI/EXEC
// and returns its error: nil when every command ran.
func (p *txPipe) do(ctx context.Context, key string, cmds ...*redis.Cmd) error {
	j := txJob{key: key}
	j.n = copy(j.cmds[:], cmds)
	if p.q == nil {
		return p.One(ctx, j).err
	}
	j, err := p.q.Do(ctx, key, j)
	if err != nil {
		return err
	}
	return j.err
}

// One sends a Set's transaction alone (autopipe.Sender).
func (p *txPipe) One(ctx context.Context, j txJob) txJob {
	pipe := p.rdb.TxPipeline()
	for _, c := range j.cmds[:j.n] {
		_ = pipe.Process(ctx, c)
	}
	_, err := pipe.Exec(ctx)
	j.err = j.outcome(err)
	return j
}

// Many sends Sets' transactions in one round trip (autopipe.Sender).
func (p *txPipe) Many(ctx context.Context, js []*txJob) {
	if p.cluster == nil {
		pipe := p.rdb.TxPipeline()
		for _, j := range js {
			for _, c := range j.cmds[:j.n] {
				_ = pipe.Process(ctx, c)
			}
		}
		_, err := pipe.Exec(ctx)
		for _, j := range js {
			j.err = j.outcome(err)
		}
		return
	}
	// A cluster's transaction must stay on one slot: each Set is its own
	// MULTI/EXEC, sent to the master of the batch (the Queue batches by
	// master). A redirect fails the Set's transaction (EXECABORT), and
	// Store.set sends it again through the write script.
	node, err := p.cluster.MasterForKey(ctx, js[0].key)
	if err != nil {
		for _, j := range js {
			j.err = err
		}
		return
	}
	blocks := make([]txBlock, len(js))
	pipe := node.Pipeline()
	for i, j := range js {
		b := &blocks[i]
		b.queued[0] = redis.NewStatusCmd(ctx, "multi")
		for k, c := range j.cmds[:j.n] {
			b.queued[k+1] = redis.NewStatusCmd(ctx, c.Args()...)
		}
		for _, q := range b.queued[:j.n+1] {
			_ = pipe.Process(ctx, q)
		}
		b.exec = redis.NewSliceCmd(ctx, "exec")
		_ = pipe.Process(ctx, b.exec)
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	for i, j := range js {
		j.err = blocks[i].outcome(j.n)
	}
}

// txBlock is one Set's MULTI/EXEC in a cluster master's pipeline.
type txBlock struct {
	queued [maxTxCmds + 1]*redis.StatusCmd // MULTI, then each command
	exec   *redis.SliceCmd
}

// outcome is the transaction's error: the first of its queueing, of
// EXEC, or of a command EXEC ran (n commands).
func (b *txBlock) outcome(n int) error {
	for _, q := range b.queued[:n+1] {
		if err := q.Err(); err != nil {
			return err
		}
	}
	vals, err := b.exec.Result()
	if err != nil {
		return err
	}
	if len(vals) != n {
		return fmt.Errorf("EXEC answered %d replies for %d commands", len(vals), n)
	}
	for _, v := range vals {
		if err, ok := v.(error); ok {
			return err
		}
	}
	return nil
}

// outcome is the Set's error after a TxPipeline's Exec returned err: the
// first of its commands' errors, or err if one of them has no reply.
func (j *txJob) outcome(err error) error {
	for _, c := range j.cmds[:j.n] {
		if cerr := c.Err(); cerr != nil {
			return cerr
		}
		if c.Val() == nil {
			if err == nil {
				err = errors.New("no reply in the transaction")
			}
			return err
		}
	}
	return nil
}
