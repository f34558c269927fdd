package queue

import (
	"context"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/scanmany"
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
	ts := []*keys.Template{statsKey, jobsKey}
	matches := []string{statsKey.Match(ns, nil), jobsKey.Match(ns, nil)}
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		found, err := scanmany.Keys(ctx, node, matches)
		if err != nil {
			return pkg.Fail("names", matches[0], nil, err)
		}
		for i, ks := range found {
			for _, k := range ks {
				args, err := ts[i].Parse(ns, k)
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
