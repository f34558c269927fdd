package call

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/internal/unit"
)

// Replication is asynchronous: a master acknowledges a write before its
// replicas have it, and a failover (a master that dies, or CLUSTER
// FAILOVER TAKEOVER) promotes a replica that may lack the last writes the
// clients were told succeeded. A Runner with a Durability makes the
// writes that must survive that (the Ops declared Durable) wait, in the
// same round trip, until the asked number of replicas acknowledged them:
// the script and a WAIT go out as one pipeline on one connection to the
// master of the script's key, so WAIT covers exactly that write.

// ErrNotDurable is the one error of every package for a write that was
// done but that fewer replicas than asked acknowledged within the
// durability timeout: a failover may still lose it. The packages export
// it under their own name (queue.ErrNotDurable == call.ErrNotDurable), so
// errors.Is matches it whichever package returned it. The operation's
// result is returned with it; the write is idempotent, so sending it
// again (with the same ID) is safe, and reports the first outcome.
var ErrNotDurable = errors.New("not durable: fewer replicas acknowledged the write than asked")

// Bounds of a Durability.
const (
	// MaxDurableReplicas bounds Durability.Replicas.
	MaxDurableReplicas = 64
	// MinDurableTimeout and MaxDurableTimeout bound Durability.Timeout
	// (WAIT's timeout; WAIT with 0 would block for ever).
	MinDurableTimeout = time.Millisecond
	MaxDurableTimeout = time.Minute
)

// Durability is how many replicas a durable write waits for, and for how
// long at most. The zero value waits for none (the default: no WAIT).
type Durability struct {
	Replicas int
	Timeout  time.Duration
}

// On reports whether d asks for any replica.
func (d Durability) On() bool { return d.Replicas > 0 }

// Check validates d for a package's New (the option is spelled opt in
// the error): 1 to MaxDurableReplicas replicas, a timeout of
// MinDurableTimeout to MaxDurableTimeout and under the client's
// ReadTimeout, and a client on which the WAIT can go to the key's master
// (a *redis.Client, or a *redis.ClusterClient; a Ring or another client
// cannot say which connection ran the script).
// The zero Durability is valid.
func (d Durability) Check(p *Pkg, op, opt string, rdb redis.UniversalClient) error {
	if d == (Durability{}) {
		return nil
	}
	switch {
	case d.Replicas < 1 || d.Replicas > MaxDurableReplicas:
		return p.Invalidf(op, "%s: %d replicas, want 1..%d", opt, d.Replicas, MaxDurableReplicas)
	case d.Timeout < MinDurableTimeout || d.Timeout > MaxDurableTimeout:
		return p.Invalidf(op, "%s: timeout %v outside [%v, %v]", opt, d.Timeout, MinDurableTimeout, MaxDurableTimeout)
	}
	var rt time.Duration
	switch c := rdb.(type) {
	case *redis.Client:
		rt = c.Options().ReadTimeout
	case *redis.ClusterClient:
		rt = c.Options().ReadTimeout
	default:
		return p.Invalidf(op, "%s: needs a *redis.Client or a *redis.ClusterClient, not a %T", opt, rdb)
	}
	if rt > 0 && d.Timeout >= rt {
		return p.Invalidf(op, "%s: timeout %v not under the client's ReadTimeout %v (WAIT would be cut)", opt, d.Timeout, rt)
	}
	return nil
}

// Durable marks an Op as a write that must survive a failover: on a
// Runner with a Durability (SetDurability) it is not auto-pipelined, and
// waits for the replicas in its round trip. Only a reply with status OK
// can be ErrNotDurable: the others wrote nothing (or a replay reports
// them), and keep their own meaning.
func Durable() OpOption { return func(o *Op) { o.durable = true } }

// SetDurability makes r's Durable Ops wait for d's replicas. Call it
// before r is used (in the package's New), with a d that passed Check.
func (r *Runner) SetDurability(d Durability) { r.dur = d }

// NotDurable splits a Run's error: it returns err as nd when it is only
// ErrNotDurable (the operation succeeded, its result is valid, and the
// caller gets it with nd), and as err otherwise.
func NotDurable(err error) (nd, rest error) {
	var e *Error
	if errors.As(err, &e) && e.Kind == ErrNotDurable {
		return err, nil
	}
	return nil, err
}

// waited is the outcome of the WAITs of one call.
type waited struct {
	on   bool  // a WAIT was sent after a script that ran
	acks int64 // the fewest replicas any of them counted
	err  error // a WAIT that failed (the script ran)
}

func (w *waited) add(c *redis.IntCmd) {
	n, err := c.Result()
	if !w.on {
		w.on, w.acks = true, n
	}
	w.acks = min(w.acks, n)
	if err != nil && w.err == nil {
		w.err = err
	}
}

// check returns the ErrNotDurable of op on key when fewer than d.Replicas
// acknowledged, or nil.
func (w *waited) check(op *Op, key string, d Durability) error {
	if !w.on || (w.err == nil && w.acks >= int64(d.Replicas)) {
		return nil
	}
	why := fmt.Errorf("%d of %d replicas acknowledged within %v; the write was done", max(w.acks, 0), d.Replicas, d.Timeout)
	if w.err != nil {
		why = fmt.Errorf("WAIT failed (the write was done): %w", w.err)
	}
	return op.pkg.Fail(op.name, key, ErrNotDurable, why)
}

// durable reports whether op's calls on r wait for replicas.
func (r *Runner) durable(op *Op) bool { return op.durable && r.dur.On() }

// node returns the client whose connections reach the master of key.
func (r *Runner) node(ctx context.Context, key string) (redis.UniversalClient, error) {
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return r.rdb, nil
}

// runWait runs calls, all on the master of their first key's slot, as one
// pipeline of EVALSHA and a WAIT; those that met NOSCRIPT go again, as
// EVAL and a WAIT of their own (another pipeline may take another
// connection). A MOVED reply (the slot has moved: the node client does not
// follow it) makes the cluster client reload its slot map, so that the
// retry of the call goes to the new master.
func (r *Runner) runWait(ctx context.Context, c redis.UniversalClient, calls []script.Call, w *waited) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	send := func(idx []int, eval bool) {
		pipe := c.Pipeline()
		for _, i := range idx {
			x := calls[i]
			if eval {
				cmds[i] = x.S.Eval(ctx, pipe, x.Keys, x.Args...)
			} else {
				cmds[i] = x.S.EvalSha(ctx, pipe, x.Keys, x.Args...)
			}
		}
		wait := redis.NewIntCmd(ctx, "wait", r.dur.Replicas, unit.MsCeil(r.dur.Timeout))
		_ = pipe.Process(ctx, wait)
		_, _ = pipe.Exec(ctx)
		for _, i := range idx {
			if cmds[i].Err() == nil {
				w.add(wait) // a script ran on this connection
				return
			}
		}
	}
	all := make([]int, len(calls))
	for i := range all {
		all[i] = i
	}
	send(all, false)
	var again []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		send(again, true)
	}
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		for _, cmd := range cmds {
			if redis.HasErrorPrefix(cmd.Err(), "MOVED") {
				cc.ReloadState(ctx)
				break
			}
		}
	}
	return cmds
}

// runOneWait is run for a durable Op.
func (r *Runner) runOneWait(ctx context.Context, op *Op, keys []string, args []any, w *waited) (any, error) {
	c, err := r.node(ctx, keys[0])
	if err != nil {
		return nil, err
	}
	cmds := r.runWait(ctx, c, []script.Call{{S: op.script, Keys: keys, Args: args}}, w)
	return cmds[0].Result()
}

// pipelineWait is script.Pipeline for a batch with durable calls: the
// calls are grouped by the master of their first key, and each group runs
// as runWait does, the groups in parallel. ws[i] is call i's WAIT outcome.
func (r *Runner) pipelineWait(ctx context.Context, calls []script.Call, ws []*waited) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	type group struct {
		c   redis.UniversalClient
		idx []int
	}
	var groups []*group
	byNode := map[redis.UniversalClient]*group{}
	for i, x := range calls {
		c, err := r.node(ctx, x.Keys[0])
		if err != nil {
			cmds[i] = redis.NewCmd(ctx)
			cmds[i].SetErr(err)
			continue
		}
		g := byNode[c]
		if g == nil {
			g = &group{c: c}
			byNode[c] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub := make([]script.Call, len(g.idx))
			for j, i := range g.idx {
				sub[j] = calls[i]
			}
			w := &waited{}
			got := r.runWait(ctx, g.c, sub, w)
			for j, i := range g.idx {
				cmds[i] = got[j]
				*ws[i] = *w
			}
		}()
	}
	wg.Wait()
	return cmds
}
