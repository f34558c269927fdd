package cache

import (
	"context"
	"sort"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// EndpointStat sums the API cache entries (APILayout) of one endpoint and
// method.
type EndpointStat struct {
	Endpoint, Method string
	Entries          int64 // live entries
	Hits             int64 // their "hits" fields: reads served from Redis, as flushed (WithHitFlush)
	Bytes            int64 // their "size_bytes" fields
}

// HitRate is Hits / (Hits + Entries): each entry was a miss once (its
// load), then served its hits. It covers the live entries only; 0 when
// there are none.
func (s EndpointStat) HitRate() float64 {
	if s.Hits+s.Entries == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Entries)
}

// TagStat is one invalidation tag (cache:tag:{tag_name} or
// cache:tag:user:{user_id}) and how many entries it names.
type TagStat struct {
	Tag     string // the tag as InvalidateTag takes it ("user:42" for a user tag)
	Members int64
}

// EndpointStats sums the API cache's live entries per endpoint and
// method, from their metadata hashes, sorted by endpoint then method. It
// SCANs every master of a cluster and reads the hashes in one pipeline
// per master: for admin tools (the dashboard), never for a hot path.
func EndpointStats(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace) ([]EndpointStat, error) {
	var mu sync.Mutex
	sums := map[[2]string]*EndpointStat{}
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		var found []string
		var args [][]string
		it := node.Scan(ctx, 0, metaKey.Match(ns, nil), 1000).Iterator()
		for it.Next(ctx) {
			a, err := metaKey.Parse(ns, it.Val())
			if err != nil || len(a) != 3 {
				continue
			}
			found, args = append(found, it.Val()), append(args, a)
		}
		if err := it.Err(); err != nil {
			return pkg.Fail("endpoint stats", metaKey.Match(ns, nil), nil, err)
		}
		if len(found) == 0 {
			return nil
		}
		pipe := node.Pipeline()
		cmds := make([]*redis.SliceCmd, len(found))
		for i, k := range found {
			cmds[i] = pipe.HMGet(ctx, k, "created_at", "hits", "size_bytes")
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return pkg.Fail("endpoint stats", found[0], nil, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i, c := range cmds {
			v := c.Val()
			if len(v) != 3 || v[0] == nil { // a lease or marker without an entry
				continue
			}
			k := [2]string{args[i][0], args[i][1]}
			s := sums[k]
			if s == nil {
				s = &EndpointStat{Endpoint: k[0], Method: k[1]}
				sums[k] = s
			}
			s.Entries++
			s.Hits += num(v[1])
			s.Bytes += num(v[2])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]EndpointStat, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Endpoint != out[j].Endpoint {
			return out[i].Endpoint < out[j].Endpoint
		}
		return out[i].Method < out[j].Method
	})
	return out, nil
}

func num(v any) int64 {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// TagStats lists the invalidation tags under ns with their member counts,
// sorted by tag. SCAN on every master and one pipeline per master: for
// admin tools, never for a hot path.
func TagStats(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace) ([]TagStat, error) {
	var mu sync.Mutex
	var out []TagStat
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		var found, tags []string
		for _, t := range []*keys.Template{tagKey, userTagKey} {
			it := node.Scan(ctx, 0, t.Match(ns, nil), 1000).Iterator()
			for it.Next(ctx) {
				owner, a, ok := keys.Default().Match(ns, it.Val())
				if !ok || owner != t || len(a) != 1 {
					continue
				}
				tag := a[0]
				if t == userTagKey {
					tag = "user:" + tag
				}
				found, tags = append(found, it.Val()), append(tags, tag)
			}
			if err := it.Err(); err != nil {
				return pkg.Fail("tags", t.Match(ns, nil), nil, err)
			}
		}
		if len(found) == 0 {
			return nil
		}
		pipe := node.Pipeline()
		cards := make([]*redis.IntCmd, len(found))
		for i, k := range found {
			cards[i] = pipe.ZCard(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return pkg.Fail("tags", found[0], nil, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i, c := range cards {
			out = append(out, TagStat{Tag: tags[i], Members: c.Val()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tag < out[j].Tag })
	return out, nil
}
