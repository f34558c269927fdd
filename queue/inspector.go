package queue

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/scanmany"
	"github.com/redschema/redschema/keys"
)

// Inspector reads what an admin tool (the dashboard, the CLI) shows of
// the queues under one namespace: their names, and their stats and first
// jobs, many queues in one round trip. It is one per namespace, not per
// queue: the queues are named in each call. It is safe for concurrent
// use.
type Inspector struct {
	rdb redis.UniversalClient
	ns  keys.Namespace
}

// NewInspector returns an Inspector over rdb, built like New without a
// queue name and taking its options: WithNamespace selects the keys it
// reads, and the other options, which mean nothing to reads, are checked
// as New checks them and otherwise ignored (payloads are read as their
// JSON whatever WithCodec says). It fails with ErrInvalid for a nil
// client, a go-redis client without ContextTimeoutEnabled or an option
// New refuses; it does not contact Redis.
func NewInspector(rdb redis.UniversalClient, opts ...Option) (*Inspector, error) {
	const op = "new inspector"
	o, err := call.Configure(pkg, op, rdb, defaultOptions(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	if err := o.durability.Check(pkg, op, "WithDurability", rdb); err != nil {
		return nil, err
	}
	return &Inspector{rdb: rdb, ns: o.ns}, nil
}

// Names returns, sorted, the names of the queues that have a stats hash
// or a jobs hash under the namespace: every queue that ever accepted a
// job. It SCANs every master of a cluster (one pipeline per SCAN step),
// so it is never for a hot path. Keys whose name does not parse as a
// queue key are skipped.
func (in *Inspector) Names(ctx context.Context) ([]string, error) {
	var mu sync.Mutex
	seen := map[string]bool{}
	ts := []*keys.Template{statsKey, jobsKey}
	matches := []string{statsKey.Match(in.ns, nil), jobsKey.Match(in.ns, nil)}
	err := keys.ForEachNode(ctx, in.rdb, func(ctx context.Context, node redis.UniversalClient) error {
		found, err := scanmany.Keys(ctx, node, matches)
		if err != nil {
			return pkg.Fail("names", matches[0], nil, err)
		}
		for i, ks := range found {
			for _, k := range ks {
				args, err := ts[i].Parse(in.ns, k)
				if err != nil || len(args) != 1 {
					continue
				}
				mu.Lock()
				seen[args[0]] = true
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Views reads, for each queue of names, what Queue.ReadView reads: its
// Stats and the first limit jobs (1..10,000) of each of states (List's
// states; with none, only the stats and limit is ignored), payloads as
// their JSON. All the queues' reads go out in one pipeline of read-only
// scripts: one round trip per node of a cluster (a queue's keys share a
// slot); a read the pipeline could not run (the server lost the scripts,
// a slot migration) is sent again alone. The views come back in the order
// of names. A bad name, state or limit fails with ErrInvalid before
// anything is sent; a part that fails is left empty and its error joined
// to the one returned, with the others read.
func (in *Inspector) Views(ctx context.Context, names []string, limit int, states ...State) ([]View[json.RawMessage], error) {
	if len(names) == 0 {
		return nil, nil
	}
	done := make([]func() (View[json.RawMessage], error), len(names))
	pipe := in.rdb.Pipeline()
	for i, n := range names {
		q, err := New[json.RawMessage](in.rdb, n, WithNamespace(in.ns), WithPipelining(0))
		if err != nil {
			return nil, err
		}
		if done[i], err = q.queueView(ctx, pipe, limit, states...); err != nil {
			return nil, err
		}
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	out := make([]View[json.RawMessage], len(names))
	errs := make([]error, len(names))
	for i := range names {
		out[i], errs[i] = done[i]()
	}
	return out, errors.Join(errs...)
}
