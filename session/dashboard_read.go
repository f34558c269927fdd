package session

import (
	"context"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/scanmany"
	"github.com/redschema/redschema/keys"
)

// MaxAdminList bounds what IndexedUsers returns.
const MaxAdminList = 10000

// IndexedUser is a user with a session index, and how many entries it
// holds (expired entries not yet pruned included: List prunes them).
type IndexedUser struct {
	ID      string
	Entries int64
}

// IndexedUsers returns up to limit (1..MaxAdminList) users that have a
// session index under ns, most entries first. It SCANs every master of a
// cluster and counts the indexes in one pipeline per master: for admin
// tools (the dashboard), never for a hot path. It reads no session and
// returns no session ID.
func IndexedUsers(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]IndexedUser, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("indexed users", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	var mu sync.Mutex
	var out []IndexedUser
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		var found, users []string
		ks, err := scanmany.Keys(ctx, node, []string{indexKey.Match(ns, nil)}) // each key once
		if err != nil {
			return pkg.Fail("indexed users", indexKey.Match(ns, nil), nil, err)
		}
		for _, k := range ks[0] {
			a, err := indexKey.Parse(ns, k)
			if err != nil || len(a) != 1 {
				continue
			}
			found, users = append(found, k), append(users, a[0])
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
			return pkg.Fail("indexed users", found[0], nil, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i, c := range cards {
			if c.Val() > 0 {
				out = append(out, IndexedUser{ID: users[i], Entries: c.Val()})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Entries != out[j].Entries {
			return out[i].Entries > out[j].Entries
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
