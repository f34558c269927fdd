package ratelimit

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// BlockInfo is one identifier blocked by Block or WithAutoBlock.
type BlockInfo struct {
	ID        string
	Remaining time.Duration // until the block lapses; -1 if the key has no TTL
}

// MaxAdminList bounds what Blocks and ConfiguredKeys return.
const MaxAdminList = 10000

// Blocks returns up to limit (1..MaxAdminList) blocked identifiers under
// ns, soonest lapse first, with their remaining time. It SCANs every
// master of a cluster and reads the TTLs in one pipeline per master, so
// it is for admin tools (the dashboard), never for a hot path. Lift a
// block with Limiter.Reset.
func Blocks(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]BlockInfo, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("blocks", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	var mu sync.Mutex
	var out []BlockInfo
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		var found []string
		var ids []string
		it := node.Scan(ctx, 0, blockKey.Match(ns, nil), 1000).Iterator()
		for it.Next(ctx) {
			args, err := blockKey.Parse(ns, it.Val())
			if err != nil || len(args) != 1 {
				continue
			}
			found, ids = append(found, it.Val()), append(ids, args[0])
		}
		if err := it.Err(); err != nil {
			return pkg.Fail("blocks", blockKey.Match(ns, nil), nil, err)
		}
		if len(found) == 0 {
			return nil
		}
		pipe := node.Pipeline()
		ttls := make([]*redis.DurationCmd, len(found))
		for i, k := range found {
			ttls[i] = pipe.PTTL(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return pkg.Fail("blocks", found[0], nil, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i, c := range ttls {
			d := c.Val()
			if d == -2 { // lapsed between SCAN and PTTL
				continue
			}
			if d < 0 {
				d = -1
			}
			out = append(out, BlockInfo{ID: ids[i], Remaining: d})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Remaining != out[j].Remaining {
			return out[i].Remaining < out[j].Remaining
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ConfiguredKeys returns, sorted, up to limit (1..MaxAdminList) API key
// IDs that have a runtime config hash under ns (see SetConfig). It SCANs
// every master of a cluster: for admin tools, never for a hot path.
func ConfiguredKeys(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]string, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("configured keys", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	var mu sync.Mutex
	var out []string
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		it := node.Scan(ctx, 0, configKey.Match(ns, nil), 1000).Iterator()
		for it.Next(ctx) {
			args, err := configKey.Parse(ns, it.Val())
			if err != nil || len(args) != 1 {
				continue
			}
			mu.Lock()
			out = append(out, args[0])
			mu.Unlock()
		}
		if err := it.Err(); err != nil {
			return pkg.Fail("configured keys", configKey.Match(ns, nil), nil, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
