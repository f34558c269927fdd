package lock

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/scanmany"
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

// matchArgs attributes key to t with the registry and returns its
// values; a lock key that a resource default (lock:file:{file_id}, ...)
// owns gets its resource type back as the first value.
func matchArgs(ns keys.Namespace, t *keys.Template, key string) ([]string, bool) {
	owner, a, ok := own().Match(ns, key)
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

// Overview is what the locks page of an admin tool shows: the held lease
// locks, the semaphores and the interval jobs' last runs (see Held,
// Semaphores and LastRuns).
type Overview struct {
	Held       []HeldLock
	Semaphores []SemaphoreState
	LastRuns   []LastRun
}

// ReadOverview returns Held, Semaphores and LastRuns together, each up to
// limit (1..MaxAdminList), at the cost of one of them: on every master of
// a cluster, the three patterns' SCANs advance together in one pipeline
// per step (one step on a keyspace of up to about a thousand keys per
// node), then one pipeline reads everything found. For admin tools (the
// dashboard), never for a hot path.
func ReadOverview(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) (Overview, error) {
	if limit < 1 || limit > MaxAdminList {
		return Overview{}, pkg.Invalidf("overview", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	o, err := readOverview(ctx, rdb, ns, "overview", partHeld|partSems|partRuns)
	if err != nil {
		return Overview{}, err
	}
	o.sortLimit(limit)
	return o, nil
}

// The parts of an Overview to read.
const (
	partHeld = 1 << iota
	partSems
	partRuns
)

// readOverview reads the parts of an Overview: per master, one SCAN
// pipeline per step for their patterns, one pipeline for the reads.
func readOverview(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, op string, parts int) (Overview, error) {
	var tmpls []*keys.Template
	for _, p := range []struct {
		bit int
		t   *keys.Template
	}{{partHeld, lockKey}, {partSems, semKey}, {partRuns, cronKey}} {
		if parts&p.bit != 0 {
			tmpls = append(tmpls, p.t)
		}
	}
	matches := make([]string, len(tmpls))
	for i, t := range tmpls {
		matches[i] = t.Match(ns, nil)
	}
	var mu sync.Mutex
	var out Overview
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		found, err := scanmany.Keys(ctx, node, matches)
		if err != nil {
			return pkg.Fail(op, matches[0], nil, err)
		}
		type item struct {
			t    *keys.Template
			key  string
			args []string
			get  *redis.StringCmd
			ttl  *redis.DurationCmd
			z    *redis.ZSliceCmd
		}
		var items []item
		for i, ks := range found {
			for _, k := range ks {
				if a, ok := matchArgs(ns, tmpls[i], k); ok {
					items = append(items, item{t: tmpls[i], key: k, args: a})
				}
			}
		}
		if len(items) == 0 {
			return nil
		}
		pipe := node.Pipeline()
		now := pipe.Time(ctx)
		for i := range items {
			it := &items[i]
			switch it.t {
			case lockKey:
				it.get, it.ttl = pipe.Get(ctx, it.key), pipe.PTTL(ctx, it.key)
			case semKey:
				it.z = pipe.ZRangeWithScores(ctx, it.key, 0, -1)
			case cronKey:
				it.get = pipe.Get(ctx, it.key)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return pkg.Fail(op, items[0].key, nil, err)
		}
		nowMs := now.Val().UnixMilli()
		mu.Lock()
		defer mu.Unlock()
		for _, it := range items {
			switch it.t {
			case lockKey:
				if h, ok := heldLock(it.args, it.get.Val(), it.ttl.Val()); ok {
					out.Held = append(out.Held, h)
				}
			case semKey:
				if len(it.args) == 2 {
					out.Semaphores = append(out.Semaphores, semaphoreState(it.args, it.z.Val(), nowMs))
				}
			case cronKey:
				ms, err := strconv.ParseInt(it.get.Val(), 10, 64)
				if err == nil && ms >= 0 && len(it.args) == 1 {
					out.LastRuns = append(out.LastRuns, LastRun{Job: it.args[0], LastRun: time.UnixMilli(ms).UTC()})
				}
			}
		}
		return nil
	})
	return out, err
}

// heldLock decodes a lease lock's value and TTL; false for a value that
// is not a lease this package writes, or an interval job's claim record
// that holds no lease.
func heldLock(args []string, v string, remaining time.Duration) (HeldLock, bool) {
	parts := strings.Split(v, ":")
	if len(parts) < 3 || len(parts) > 4 || len(args) != 2 {
		return HeldLock{}, false
	}
	at, err1 := strconv.ParseInt(parts[1], 10, 64)
	ttl, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || remaining < 0 || (len(parts) == 4 && ttl == 0) {
		return HeldLock{}, false
	}
	return HeldLock{ResourceType: args[0], ResourceID: args[1], OwnerLabel: ownerLabel(parts[0]),
		AcquiredAt: time.UnixMilli(at).UTC(), Lease: time.Duration(ttl) * time.Millisecond, Remaining: remaining}, true
}

// semaphoreState keeps a semaphore's unexpired permits (by the server's
// clock nowMs), soonest expiry first.
func semaphoreState(args []string, zs []redis.Z, nowMs int64) SemaphoreState {
	s := SemaphoreState{ResourceType: args[0], ResourceID: args[1], Permits: []Permit{}}
	for _, z := range zs {
		m, _ := z.Member.(string)
		if int64(z.Score) <= nowMs {
			continue
		}
		s.Permits = append(s.Permits, Permit{OwnerLabel: ownerLabel(m), ExpiresAt: time.UnixMilli(int64(z.Score)).UTC()})
	}
	return s
}

// sortLimit sorts each part as Held, Semaphores and LastRuns document
// and keeps up to limit of each.
func (o *Overview) sortLimit(limit int) {
	sort.Slice(o.Held, func(i, j int) bool {
		a, b := o.Held[i], o.Held[j]
		if a.Remaining != b.Remaining {
			return a.Remaining < b.Remaining
		}
		return a.ResourceType+":"+a.ResourceID < b.ResourceType+":"+b.ResourceID
	})
	sort.Slice(o.Semaphores, func(i, j int) bool {
		a, b := o.Semaphores[i], o.Semaphores[j]
		return a.ResourceType+":"+a.ResourceID < b.ResourceType+":"+b.ResourceID
	})
	sort.Slice(o.LastRuns, func(i, j int) bool { return o.LastRuns[i].Job < o.LastRuns[j].Job })
	o.Held = o.Held[:min(len(o.Held), limit)]
	o.Semaphores = o.Semaphores[:min(len(o.Semaphores), limit)]
	o.LastRuns = o.LastRuns[:min(len(o.LastRuns), limit)]
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
	o, err := readOverview(ctx, rdb, ns, "held", partHeld)
	if err != nil {
		return nil, err
	}
	o.sortLimit(limit)
	return o.Held, nil
}

// Semaphores returns up to limit (1..MaxAdminList) semaphores under ns
// with their unexpired permits (by the server's clock), sorted by
// resource. SCAN on every master and one pipeline per master: for admin
// tools, never for a hot path.
func Semaphores(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]SemaphoreState, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("semaphores", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	o, err := readOverview(ctx, rdb, ns, "semaphores", partSems)
	if err != nil {
		return nil, err
	}
	o.sortLimit(limit)
	return o.Semaphores, nil
}

// LastRuns returns up to limit (1..MaxAdminList) interval jobs under ns
// with the start of their last run (Interval.LastRun), sorted by job.
// SCAN on every master and one pipeline per master: for admin tools,
// never for a hot path.
func LastRuns(ctx context.Context, rdb redis.UniversalClient, ns keys.Namespace, limit int) ([]LastRun, error) {
	if limit < 1 || limit > MaxAdminList {
		return nil, pkg.Invalidf("last runs", "limit %d is not in 1..%d", limit, MaxAdminList)
	}
	o, err := readOverview(ctx, rdb, ns, "last runs", partRuns)
	if err != nil {
		return nil, err
	}
	o.sortLimit(limit)
	return o.LastRuns, nil
}
