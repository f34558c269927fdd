package lock

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// MaxAdminList bounds what Held, Semaphores and LastRuns return.
const MaxAdminList = 10000

// HeldLock is a lease lock found by Held. It carries the owner's label
// (WithOwner), never the owner ID itself: the ID is what proves
// ownership of the lease.
type HeldLock struct {
	ResourceType, ResourceID string
	OwnerLabel               string // "" when the holder set no label
	AcquiredAt               time.Time
	Lease                    time.Duration // as acquired (or last extended)
	Remaining                time.Duration // the key's remaining TTL
}

// SemaphoreState is a semaphore found by Semaphores: its permits, soonest
// expiry first.
type SemaphoreState struct {
	ResourceType, ResourceID string
	Permits                  []Permit
}

// Permit is one held permit of a semaphore.
type Permit struct {
	OwnerLabel string
	ExpiresAt  time.Time
}

// LastRun is an interval job's last run found by LastRuns.
type LastRun struct {
	Job     string
	LastRun time.Time
}

// ownerLabel is the label part of an owner ID (label "." 24 hex digits).
func ownerLabel(owner string) string {
	if i := strings.LastIndexByte(owner, '.'); i >= 0 {
		return owner[:i]
	}
	return ""
}

// scan calls fn with the keys of t under ns on every master, matched to
// t by the registry (so that a key another pattern owns is skipped), in
// batches, each with the node that holds it.
func scan(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, t *keys.Template, fn func(ctx context.Context, node redis.UniversalClient, ks []string, args [][]string) error) error {
	return keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		var ks []string
		var args [][]string
		it := node.Scan(ctx, 0, t.Match(ns, nil), 1000).Iterator()
		for it.Next(ctx) {
			a, ok := matchArgs(ns, t, it.Val())
			if !ok {
				continue
			}
			ks, args = append(ks, it.Val()), append(args, a)
		}
		if err := it.Err(); err != nil {
			return pkg.Fail("scan", t.Match(ns, nil), nil, err)
		}
		if len(ks) == 0 {
			return nil
		}
		return fn(ctx, node, ks, args)
	})
}

// matchArgs attributes key to t with the registry and returns its
// values; a lock key that a resource default (lock:file:{file_id}, ...)
// owns gets its resource type back as the first value.
func matchArgs(ns keys.Namespace, t *keys.Template, key string) ([]string, bool) {
	owner, a, ok := keys.Default().Match(ns, key)
	switch {
	case !ok:
		return nil, false
	case owner == t:
		return a, true
	case t == lockKey && len(a) == 1:
		for rt, d := range resourceDefaults {
			if d == owner {
				return []string{rt, a[0]}, true
			}
		}
	}
	return nil, false
}

// Held returns up to limit (1..MaxAdminList) lease locks held under ns,
// soonest expiry first. It SCANs every master of a cluster and reads the
// leases in one pipeline per master: for admin tools (the dashboard),
// never for a hot path. A value that is not a lease this package writes
// is skipped, and so is an interval job's claim record that holds no
// lease.
func Held(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]HeldLock, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("held", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	var mu sync.Mutex
	var out []HeldLock
	err := scan(ctx, rdb, ns, lockKey, func(ctx context.Context, node redis.UniversalClient, ks []string, args [][]string) error {
		pipe := node.Pipeline()
		gets := make([]*redis.StringCmd, len(ks))
		ttls := make([]*redis.DurationCmd, len(ks))
		for i, k := range ks {
			gets[i], ttls[i] = pipe.Get(ctx, k), pipe.PTTL(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return pkg.Fail("held", ks[0], nil, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range ks {
			parts := strings.Split(gets[i].Val(), ":")
			if len(parts) < 3 || len(parts) > 4 || len(args[i]) != 2 {
				continue
			}
			at, err1 := strconv.ParseInt(parts[1], 10, 64)
			ttl, err2 := strconv.ParseInt(parts[2], 10, 64)
			if err1 != nil || err2 != nil || ttls[i].Val() < 0 || (len(parts) == 4 && ttl == 0) {
				continue // not a lease, or an interval claim record that holds none
			}
			out = append(out, HeldLock{ResourceType: args[i][0], ResourceID: args[i][1], OwnerLabel: ownerLabel(parts[0]),
				AcquiredAt: time.UnixMilli(at).UTC(), Lease: time.Duration(ttl) * time.Millisecond, Remaining: ttls[i].Val()})
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
		return out[i].ResourceType+":"+out[i].ResourceID < out[j].ResourceType+":"+out[j].ResourceID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Semaphores returns up to limit (1..MaxAdminList) semaphores under ns
// with their unexpired permits (by the server's clock), sorted by
// resource. SCAN on every master and one pipeline per master: for admin
// tools, never for a hot path.
func Semaphores(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]SemaphoreState, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("semaphores", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	var mu sync.Mutex
	var out []SemaphoreState
	err := scan(ctx, rdb, ns, semKey, func(ctx context.Context, node redis.UniversalClient, ks []string, args [][]string) error {
		pipe := node.Pipeline()
		now := pipe.Time(ctx)
		zs := make([]*redis.ZSliceCmd, len(ks))
		for i, k := range ks {
			zs[i] = pipe.ZRangeWithScores(ctx, k, 0, -1)
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return pkg.Fail("semaphores", ks[0], nil, err)
		}
		nowMs := now.Val().UnixMilli()
		mu.Lock()
		defer mu.Unlock()
		for i := range ks {
			if len(args[i]) != 2 {
				continue
			}
			s := SemaphoreState{ResourceType: args[i][0], ResourceID: args[i][1], Permits: []Permit{}}
			for _, z := range zs[i].Val() {
				m, _ := z.Member.(string)
				if int64(z.Score) <= nowMs {
					continue
				}
				s.Permits = append(s.Permits, Permit{OwnerLabel: ownerLabel(m), ExpiresAt: time.UnixMilli(int64(z.Score)).UTC()})
			}
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].ResourceType+":"+out[i].ResourceID < out[j].ResourceType+":"+out[j].ResourceID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// LastRuns returns up to limit (1..MaxAdminList) interval jobs under ns
// with the start of their last run (Interval.LastRun), sorted by job.
// SCAN on every master and one pipeline per master: for admin tools,
// never for a hot path.
func LastRuns(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]LastRun, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("last runs", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	var mu sync.Mutex
	var out []LastRun
	err := scan(ctx, rdb, ns, cronKey, func(ctx context.Context, node redis.UniversalClient, ks []string, args [][]string) error {
		pipe := node.Pipeline()
		gets := make([]*redis.StringCmd, len(ks))
		for i, k := range ks {
			gets[i] = pipe.Get(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return pkg.Fail("last runs", ks[0], nil, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range ks {
			ms, err := strconv.ParseInt(gets[i].Val(), 10, 64)
			if err != nil || ms < 0 || len(args[i]) != 1 {
				continue
			}
			out = append(out, LastRun{Job: args[i][0], LastRun: time.UnixMilli(ms).UTC()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
