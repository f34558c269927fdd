package queue

import (
	"context"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// Names returns, sorted, the names of the queues that have a stats hash
// or a jobs hash under ns: every queue that ever accepted a job. It
// SCANs every master of a cluster, so it is for admin tools (the
// dashboard, a CLI), never for a hot path. Keys whose name does not parse
// as a queue key are skipped.
func Names(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace) ([]string, error) {
	var mu sync.Mutex
	seen := map[string]bool{}
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		for _, t := range []*keys.Template{statsKey, jobsKey} {
			it := node.Scan(ctx, 0, t.Match(ns, nil), 1000).Iterator()
			for it.Next(ctx) {
				args, err := t.Parse(ns, it.Val())
				if err != nil || len(args) != 1 {
					continue
				}
				mu.Lock()
				seen[args[0]] = true
				mu.Unlock()
			}
			if err := it.Err(); err != nil {
				return pkg.Fail("names", t.Match(ns, nil), nil, err)
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
