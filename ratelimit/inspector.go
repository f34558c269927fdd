package ratelimit

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/scanmany"
	"github.com/redschema/redschema/keys"
)

// Inspector reads what an admin tool (the dashboard, the CLI) shows of
// the rate limits under one namespace: the blocked identifiers and the
// API keys with a runtime config. It SCANs every master of a cluster, so
// it is never for a hot path. It is safe for concurrent use.
type Inspector struct {
	rdb redis.UniversalClient
	ns  keys.Namespace
}

// NewInspector returns an Inspector over rdb, built like New without its
// policy and taking its options, checked as New checks them: WithNamespace
// selects the keys it reads, and the other options mean nothing to reads.
// It fails with ErrInvalid for a nil client, a go-redis client without
// ContextTimeoutEnabled or an option New refuses; it does not contact
// Redis.
func NewInspector(rdb redis.UniversalClient, opts ...Option) (*Inspector, error) {
	o, err := call.Configure(pkg, "new inspector", rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	return &Inspector{rdb: rdb, ns: o.ns}, nil
}

// maxAdminList bounds the limit of the Inspector's reads.
const maxAdminList = 10000

// BlockInfo is one identifier blocked by Block or WithAutoBlock, as
// Inspector.Blocks finds it.
type BlockInfo struct {
	ID        string
	Remaining time.Duration // until the block lapses; -1 if the key has no TTL
}

// Blocks returns up to limit (1..10000) identifiers blocked under the
// namespace, soonest lapse first, with their remaining time. Per master,
// the SCAN (one pipeline per step) and one pipeline that reads the TTLs.
// Lift a block with Limiter.Unblock (counters kept) or Limiter.Reset.
func (in *Inspector) Blocks(ctx context.Context, limit int) ([]BlockInfo, error) {
	o, err := in.read(ctx, "blocks", true, false, limit)
	return o.Blocks, err
}

// ConfiguredKeys returns, sorted, up to limit (1..10000) API key IDs that
// have a runtime config hash under the namespace (see Limiter.SetConfig).
// Per master, the SCAN alone (one pipeline per step).
func (in *Inspector) ConfiguredKeys(ctx context.Context, limit int) ([]string, error) {
	o, err := in.read(ctx, "configured keys", false, true, limit)
	return o.Configured, err
}

// Overview is what the rate-limit page of an admin tool lists: the blocks
// and the API keys with a runtime config (see Inspector.Overview).
type Overview struct {
	Blocks     []BlockInfo
	Configured []string
}

// Overview returns what Blocks and ConfiguredKeys return, each up to
// limit (1..10000), at the cost of Blocks alone: on every master of a
// cluster, both patterns' SCANs advance together in one pipeline per step
// (one step on a keyspace of up to about a thousand keys per node), then
// one pipeline reads the blocks' TTLs: two round trips per master on such
// a keyspace.
func (in *Inspector) Overview(ctx context.Context, limit int) (Overview, error) {
	return in.read(ctx, "overview", true, true, limit)
}

// read checks limit, reads the parts asked for and sorts and cuts them.
func (in *Inspector) read(ctx context.Context, op string, blocks, configured bool, limit int) (Overview, error) {
	if limit < 1 || limit > maxAdminList {
		return Overview{}, pkg.Invalidf(op, "limit %d is not in 1..%d", limit, maxAdminList)
	}
	o, err := readOverview(ctx, in.rdb, in.ns, op, blocks, configured)
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
			cmds, _ := pipe.Exec(ctx) // a key gone since the SCAN is a redis.Nil: WrapPipe skips it, not the rest
			if err := pkg.WrapPipe(ctx, op, cmds); err != nil {
				return err
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
