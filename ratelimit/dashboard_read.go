package ratelimit

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/scanmany"
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
// block with Limiter.Unblock (counters kept) or Limiter.Reset.
func Blocks(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]BlockInfo, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("blocks", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	o, err := readOverview(ctx, rdb, ns, "blocks", true, false)
	if err != nil {
		return nil, err
	}
	o.sortLimit(limit)
	return o.Blocks, nil
}

// ConfiguredKeys returns, sorted, up to limit (1..MaxAdminList) API key
// IDs that have a runtime config hash under ns (see SetConfig). It SCANs
// every master of a cluster: for admin tools, never for a hot path.
func ConfiguredKeys(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]string, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("configured keys", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	o, err := readOverview(ctx, rdb, ns, "configured keys", false, true)
	if err != nil {
		return nil, err
	}
	o.sortLimit(limit)
	return o.Configured, nil
}

// Overview is what the rate-limit page of an admin tool lists: the blocks
// and the API keys with a runtime config (see Blocks and ConfiguredKeys).
type Overview struct {
	Blocks     []BlockInfo
	Configured []string
}

// ReadOverview returns Blocks and ConfiguredKeys together, each up to
// limit (1..MaxAdminList), at the cost of Blocks alone: on every master
// of a cluster, both patterns' SCANs advance together in one pipeline per
// step (one step on a keyspace of up to about a thousand keys per node),
// then one pipeline reads the blocks' TTLs. For admin tools, never for a
// hot path.
func ReadOverview(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) (Overview, error) {
	if limit < 1 || limit > MaxAdminList {
		return Overview{}, pkg.Invalidf("overview", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	o, err := readOverview(ctx, rdb, ns, "overview", true, true)
	if err != nil {
		return Overview{}, err
	}
	o.sortLimit(limit)
	return o, nil
}

// readOverview reads the blocks and the configured keys, as asked.
func readOverview(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, op string, blocks, configured bool) (Overview, error) {
	var matches []string
	var tmpls []*keys.Template
	if blocks {
		matches, tmpls = append(matches, blockKey.Match(ns, nil)), append(tmpls, blockKey)
	}
	if configured {
		matches, tmpls = append(matches, configKey.Match(ns, nil)), append(tmpls, configKey)
	}
	var mu sync.Mutex
	var out Overview
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		found, err := scanmany.Keys(ctx, node, matches)
		if err != nil {
			return pkg.Fail(op, matches[0], nil, err)
		}
		var bks, ids, cfg []string
		for i, ks := range found {
			for _, k := range ks {
				args, err := tmpls[i].Parse(ns, k)
				switch {
				case err != nil || len(args) != 1:
				case tmpls[i] == blockKey:
					bks, ids = append(bks, k), append(ids, args[0])
				default:
					cfg = append(cfg, args[0])
				}
			}
		}
		var ttls []*redis.DurationCmd
		if len(bks) > 0 {
			pipe := node.Pipeline()
			ttls = make([]*redis.DurationCmd, len(bks))
			for i, k := range bks {
				ttls[i] = pipe.PTTL(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
				return pkg.Fail(op, bks[0], nil, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		out.Configured = append(out.Configured, cfg...)
		for i, c := range ttls {
			d := c.Val()
			if d == -2 { // lapsed between SCAN and PTTL
				continue
			}
			if d < 0 {
				d = -1
			}
			out.Blocks = append(out.Blocks, BlockInfo{ID: ids[i], Remaining: d})
		}
		return nil
	})
	return out, err
}

// sortLimit sorts the blocks (soonest lapse first) and the configured keys
// and keeps up to limit of each.
func (o *Overview) sortLimit(limit int) {
	sort.Slice(o.Blocks, func(i, j int) bool {
		if o.Blocks[i].Remaining != o.Blocks[j].Remaining {
			return o.Blocks[i].Remaining < o.Blocks[j].Remaining
		}
		return o.Blocks[i].ID < o.Blocks[j].ID
	})
	sort.Strings(o.Configured)
	o.Blocks = o.Blocks[:min(len(o.Blocks), limit)]
	o.Configured = o.Configured[:min(len(o.Configured), limit)]
}
