package cache

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/scanmany"
	"github.com/redschema/redschema/keys"
)

// Inspector holds the admin reads of the cache for the dashboard and the
// CLI: the API cache's sums per endpoint and its invalidation tags. It
// SCANs every master of a cluster: for admin tools, never for a hot path.
// Build it with NewInspector; it is safe for concurrent use.
type Inspector struct {
	rdb redis.UniversalClient
	ns  keys.Namespace
}

// NewInspector returns the Inspector of the cache under the namespace of
// WithNamespace. It takes the options of New and checks them as New does
// (ErrInvalid on a nil client, a client without ContextTimeoutEnabled or
// a bad option); options other than WithNamespace mean nothing to reads
// and are otherwise ignored. It does not contact Redis.
func NewInspector(rdb redis.UniversalClient, opts ...Option) (*Inspector, error) {
	o, err := call.Configure(pkg, "new inspector", rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	return &Inspector{rdb: rdb, ns: o.ns}, nil
}

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
// method, from their metadata hashes, sorted by endpoint then method. On
// every master it costs the SCAN round trips (one on a keyspace of up to
// about a thousand keys per node) and one pipeline reading the hashes.
func (in *Inspector) EndpointStats(ctx context.Context) ([]EndpointStat, error) {
	o, err := in.read(ctx, "endpoint stats", true, false)
	return o.Endpoints, err
}

// TagStats lists the invalidation tags with their member counts, sorted
// by tag. On every master it costs the SCAN round trips and one pipeline
// reading the tags' sizes.
func (in *Inspector) TagStats(ctx context.Context) ([]TagStat, error) {
	o, err := in.read(ctx, "tags", false, true)
	return o.Tags, err
}

// Overview is what the cache page of an admin tool shows: EndpointStats
// and TagStats.
type Overview struct {
	Endpoints []EndpointStat
	Tags      []TagStat
}

// Overview returns EndpointStats and TagStats together at the cost
// of one of them: on every master of a cluster, the SCANs of the metadata
// and tag patterns advance together in one pipeline per step (one step on
// a keyspace of up to about a thousand keys per node), then one pipeline
// reads the hashes and the tags' sizes: two round trips per node. A key
// of another type, or metadata whose hits or size is not a count, is left
// out: the Overview holds what was read, with an error matching
// keys.ErrCorrupt that names each such key.
func (in *Inspector) Overview(ctx context.Context) (Overview, error) {
	return in.read(ctx, "overview", true, true)
}

// read reads the endpoint sums and the tags, as asked.
func (in *Inspector) read(ctx context.Context, op string, endpoints, tags bool) (Overview, error) {
	rdb, ns := in.rdb, in.ns
	var tmpls []*keys.Template
	if endpoints {
		tmpls = append(tmpls, metaKey)
	}
	if tags {
		tmpls = append(tmpls, tagKey, userTagKey)
	}
	matches := make([]string, len(tmpls))
	for i, t := range tmpls {
		matches[i] = t.Match(ns, nil)
	}
	var mu sync.Mutex
	sums := map[[2]string]*EndpointStat{}
	var out Overview
	var corrupt []error // every master's keys of another type, left out (under mu)
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		found, err := scanmany.Keys(ctx, node, matches)
		if err != nil {
			return pkg.Fail(op, matches[0], nil, err)
		}
		var metas, tagKeys, tagNames []string
		var args [][]string
		for i, ks := range found {
			t := tmpls[i]
			for _, k := range ks {
				if t == metaKey {
					if a, err := metaKey.Parse(ns, k); err == nil && len(a) == 3 {
						metas, args = append(metas, k), append(args, a)
					}
					continue
				}
				owner, a, ok := own().Match(ns, k)
				if !ok || owner != t || len(a) != 1 {
					continue
				}
				tag := a[0]
				if t == userTagKey {
					tag = "user:" + tag
				}
				tagKeys, tagNames = append(tagKeys, k), append(tagNames, tag)
			}
		}
		if len(metas)+len(tagKeys) == 0 {
			return nil
		}
		pipe := node.Pipeline()
		hm := make([]*redis.SliceCmd, len(metas))
		for i, k := range metas {
			hm[i] = pipe.HMGet(ctx, k, "created_at", "hits", "size_bytes", "hint")
		}
		cards := make([]*redis.IntCmd, len(tagKeys))
		for i, k := range tagKeys {
			cards[i] = pipe.ZCard(ctx, k)
		}
		_, _ = pipe.Exec(ctx) // every command carries its own error
		mu.Lock()
		defer mu.Unlock()
		for i, c := range hm {
			if skip, err := pkg.Skip(ctx, op, &corrupt, c); err != nil {
				return err
			} else if skip {
				continue
			}
			v := c.Val()
			if len(v) != 4 || v[0] == nil || v[3] == "neg" || v[3] == "pass" {
				continue // a lease, or the marker of a load that found nothing or declined to store
			}
			hits, ok1 := count(v[1])
			size, ok2 := count(v[2])
			if !ok1 || !ok2 {
				corrupt = append(corrupt, pkg.Fail(op, metas[i], nil, keys.Corrupt(metas[i],
					fmt.Errorf("hits %.32q or size_bytes %.32q is not a count", v[1], v[2]))))
				continue
			}
			k := [2]string{args[i][0], args[i][1]}
			s := sums[k]
			if s == nil {
				s = &EndpointStat{Endpoint: k[0], Method: k[1]}
				sums[k] = s
			}
			s.Entries++
			s.Hits += hits
			s.Bytes += size
		}
		for i, c := range cards {
			if skip, err := pkg.Skip(ctx, op, &corrupt, c); err != nil {
				return err
			} else if skip {
				continue
			}
			out.Tags = append(out.Tags, TagStat{Tag: tagNames[i], Members: c.Val()})
		}
		return nil
	})
	if err != nil { // a master that failed outright fails the read
		return Overview{}, err
	}
	err = errors.Join(corrupt...)
	if endpoints {
		out.Endpoints = make([]EndpointStat, 0, len(sums))
	}
	for _, s := range sums {
		out.Endpoints = append(out.Endpoints, *s)
	}
	sort.Slice(out.Endpoints, func(i, j int) bool {
		a, b := out.Endpoints[i], out.Endpoints[j]
		if a.Endpoint != b.Endpoint {
			return a.Endpoint < b.Endpoint
		}
		return a.Method < b.Method
	})
	sort.Slice(out.Tags, func(i, j int) bool { return out.Tags[i].Tag < out.Tags[j].Tag })
	return out, err
}

// count reads a metadata count: a decimal of at least 0.
func count(v any) (int64, bool) {
	s, ok := v.(string)
	n, err := strconv.ParseInt(s, 10, 64)
	return n, ok && err == nil && n >= 0
}
