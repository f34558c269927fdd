package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/autopipe"
)

// txPipe sends the commands of concurrent untagged Sets, each Set's in
// one MULTI/EXEC (atomic, as the write script would be), as shared
// pipelines on its own lanes (see autopipe.Queue): a Set reads nothing before
// it writes, and a transaction of plain commands costs Redis about half
// the write script (bench/README.md, docs/cache.md). On one server a
// batch is one transaction, and on a Ring one per shard (sent to the
// shards at once); on a cluster, whose transactions must stay on one
// slot, each Set is its own MULTI/EXEC in the master's pipeline. A Set
// whose transaction failed is sent again through the write script (see
// Store.set), which the Runner retries through migrations and failovers.
//
// The set event goes out once per round trip to a server, on that server
// after the writes, naming all their keys ("k {origin} {key}\n{key}..."),
// not once per Set: a Cluster forwards every PUBLISH to every master.
// Bench row "cache Set" on 3 masters, Redis µs/op: 24.4 with a message
// per Set, 19.3 with one per round trip (about 3 Sets per master's
// batch), 15.1 with none.
type txPipe struct {
	rdb     redis.UniversalClient
	cluster *redis.ClusterClient // rdb, when it is one
	ring    *redis.Ring          // rdb, when it is one
	q       *autopipe.Queue[txJob]
	channel string // the events channel
	origin  string // the Store's, which its own local tier ignores
}

// maxTxCmds is the most commands one Set sends.
const maxTxCmds = 4

// txJob is one Set's commands (all on key's slot) and its outcome.
type txJob struct {
	key  string
	cmds [maxTxCmds]*redis.Cmd
	n    int
	err  error
}

func newTxPipe(rdb redis.UniversalClient, lanes int, channel, origin string) *txPipe {
	p := &txPipe{rdb: rdb, channel: channel, origin: origin}
	p.cluster, _ = rdb.(*redis.ClusterClient)
	p.ring, _ = rdb.(*redis.Ring)
	if lanes > 0 {
		p.q = autopipe.NewQueue[txJob](rdb, lanes, p)
	}
	return p
}

// do sends cmds (at most maxTxCmds, all on key's slot) as one MULTI/EXEC
// followed by the set event of key, and returns its error: nil when
// every command ran.
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

// event is the set event of the jobs' keys, one message for them all.
func (p *txPipe) event(ctx context.Context, js ...*txJob) *redis.IntCmd {
	var b strings.Builder
	b.WriteString("k ")
	b.WriteString(p.origin)
	for i, j := range js {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte('\n') // no key holds a control byte (package keys)
		}
		b.WriteString(j.key)
	}
	return redis.NewIntCmd(ctx, "publish", p.channel, b.String())
}

// One sends a Set's transaction alone, then its event (autopipe.Sender).
func (p *txPipe) One(ctx context.Context, j txJob) txJob {
	c := p.rdb
	if p.ring != nil {
		var err error
		if c, err = p.ring.GetShardClientForKey(j.key); err != nil {
			j.err = err
			return j
		}
	}
	p.tx(ctx, c, []*txJob{&j})
	return j
}

// tx sends jobs, all bound for c's server, as one transaction that ends
// with their event.
func (p *txPipe) tx(ctx context.Context, c redis.UniversalClient, js []*txJob) {
	pipe := c.TxPipeline()
	for _, j := range js {
		for _, cmd := range j.cmds[:j.n] {
			_ = pipe.Process(ctx, cmd)
		}
	}
	ev := p.event(ctx, js...)
	_ = pipe.Process(ctx, ev)
	_, err := pipe.Exec(ctx)
	for _, j := range js {
		j.err = j.outcome(err, ev)
	}
}

// Many sends Sets' transactions in one round trip per server, then one
// event for them all (autopipe.Sender).
func (p *txPipe) Many(ctx context.Context, js []*txJob) {
	if p.ring != nil {
		// A Ring's shards are independent servers: the event of a
		// shard's writes goes to that shard, after them, as a script's
		// would (its subscribers listen on every shard, see events).
		shards := map[*redis.Client][]*txJob{}
		for _, j := range js {
			c, err := p.ring.GetShardClientForKey(j.key)
			if err != nil {
				j.err = err
				continue
			}
			shards[c] = append(shards[c], j)
		}
		var wg sync.WaitGroup
		for c, sjs := range shards {
			wg.Go(func() { p.shardTx(ctx, c, sjs) })
		}
		wg.Wait()
		return
	}
	if p.cluster == nil {
		p.tx(ctx, p.rdb, js)
		return
	}
	// A cluster's transaction must stay on one slot: each Set is its own
	// MULTI/EXEC, sent to the master of the batch (the Queue batches by
	// master), and the event follows them in the same pipeline. A
	// redirect fails the Set's transaction (EXECABORT), and Store.set
	// sends it again through the write script.
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
	ev := p.event(ctx, js...)
	_ = pipe.Process(ctx, ev)
	_, _ = pipe.Exec(ctx) // every command carries its own error
	for i, j := range js {
		j.err = blocks[i].outcome(j.n)
		if j.err == nil {
			j.err = ev.Err()
		}
	}
}

// shardTx is tx on one of a Ring's shards, on a goroutine of its own: a
// panic there (in a go-redis hook, say) would end the process, so it
// becomes the error of the shard's Sets, which Store.set then sends
// again through the write script, as after any failed transaction.
func (p *txPipe) shardTx(ctx context.Context, c redis.UniversalClient, js []*txJob) {
	defer func() {
		if r := recover(); r != nil {
			for _, j := range js {
				j.err = fmt.Errorf("cache: panic in a Ring shard's pipeline: %v", r)
			}
		}
	}()
	p.tx(ctx, c, js)
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
// first of its commands' errors, err if one of them has no reply, or the
// event's error (the Set is then sent again, by the write script, which
// publishes its own).
func (j *txJob) outcome(err error, ev *redis.IntCmd) error {
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
	return ev.Err()
}
