package session

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/scanmany"
	"github.com/redschema/redschema/keys"
)

// maxAdminList bounds what Inspector.IndexedUsers returns.
const maxAdminList = 10000

// Inspector reads the sessions keyspace for admin tools (the dashboard,
// the CLI). It writes nothing, reads no session and returns no session
// ID; it is safe for concurrent use. Build it with NewInspector.
type Inspector struct {
	rdb redis.UniversalClient
	ns  keys.Namespace
}

// NewInspector returns an Inspector over rdb, built with New's options:
// WithNamespace shapes what it reads (give it the Store's), the others
// are checked as New checks them and otherwise ignored. It fails as New
// does, with ErrInvalid; it does not contact Redis.
func NewInspector(rdb redis.UniversalClient, opts ...Option) (*Inspector, error) {
	o, err := newOptions("new inspector", rdb, opts)
	if err != nil {
		return nil, err
	}
	return &Inspector{rdb: rdb, ns: o.ns}, nil
}

// IndexedUser is a user with a session index, and how many entries it
// holds (expired entries not yet pruned included: List prunes them).
type IndexedUser struct {
	ID      string
	Entries int64
}

// IndexedUsers returns up to limit (1..10000) users that have a
// session index, most entries first. It SCANs every master of a cluster
// and counts the indexes in one pipeline per master: the SCAN's round
// trips (one per step of the cursor), then one per master; for admin
// tools, never for a hot path. A limit outside 1..10000 is
// ErrInvalid before anything is sent. An index of another type is left
// out: the list holds the other users, with an error matching
// keys.ErrCorrupt that names each such key.
func (in *Inspector) IndexedUsers(ctx context.Context, limit int) ([]IndexedUser, error) {
	if limit < 1 || limit > maxAdminList {
		return nil, pkg.Invalidf("indexed users", "limit %d is not in 1..%d", limit, maxAdminList)
	}
	ns := in.ns
	var mu sync.Mutex
	var out []IndexedUser
	var corrupt []error // every master's indexes of another type, left out (under mu)
	err := keys.ForEachNode(ctx, in.rdb, func(ctx context.Context, node redis.UniversalClient) error {
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
		_, _ = pipe.Exec(ctx) // every command carries its own error
		mu.Lock()
		defer mu.Unlock()
		for i, c := range cards {
			if skip, err := pkg.Skip(ctx, "indexed users", &corrupt, c); err != nil {
				return err
			} else if !skip && c.Val() > 0 {
				out = append(out, IndexedUser{ID: users[i], Entries: c.Val()})
			}
		}
		return nil
	})
	if err != nil { // a master that failed outright fails the read
		return nil, err
	}
	err = errors.Join(corrupt...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Entries != out[j].Entries {
			return out[i].Entries > out[j].Entries
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, err
}
