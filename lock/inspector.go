package lock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/scanmany"
	"github.com/redschema/redschema/keys"
)

// Inspector reads what an admin tool (the dashboard, the CLI) shows of
// the locks under one namespace: the held lease locks, the semaphores and
// the interval jobs' last runs. It SCANs every master of a cluster, so it
// is never for a hot path. It is safe for concurrent use.
type Inspector struct {
	rdb redis.UniversalClient
	ns  keys.Namespace
}

// NewInspector returns an Inspector over rdb, built like New and taking
// its options: WithNamespace selects the keys it reads, and the other
// options, which mean nothing to reads, are checked as New checks them
// and otherwise ignored. It fails with ErrInvalid for a nil client, a
// go-redis client without ContextTimeoutEnabled or an option New
// refuses; it does not contact Redis.
func NewInspector(rdb redis.UniversalClient, opts ...Option) (*Inspector, error) {
	const op = "new inspector"
	o, err := call.Configure(pkg, op, rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	if err := o.durable.Check(pkg, op, "WithDurability", rdb); err != nil {
		return nil, err
	}
	return &Inspector{rdb: rdb, ns: o.ns}, nil
}

// Overview returns what Held, Semaphores and LastRuns return, each up to
// limit (1..10000), at the cost of one of them: on every master of a
// cluster, the three patterns' SCANs advance together in one pipeline per
// step (one step on a keyspace of up to about a thousand keys per node),
// then one pipeline reads everything found: two round trips per master
// on such a keyspace. A key of another type, or a value this package
// does not write (see Held and LastRuns), is left out: the Overview holds
// what was read, with an error matching keys.ErrCorrupt that names each
// such key.
func (in *Inspector) Overview(ctx context.Context, limit int) (Overview, error) {
	return in.read(ctx, "overview", partHeld|partSems|partRuns, limit)
}

// Held returns up to limit (1..10000) lease locks held under the
// namespace, soonest expiry first. Per master, the SCAN (one pipeline per
// step) and one pipeline that reads the leases. An interval job's claim
// record that holds no lease is skipped; a value that is not a lease
// ({owner_id}:{timestamp}:{ttl}) or a lock without a TTL is left out and
// named, as Overview names a key of another type.
func (in *Inspector) Held(ctx context.Context, limit int) ([]HeldLock, error) {
	o, err := in.read(ctx, "held", partHeld, limit)
	return o.Held, err
}

// Semaphores returns up to limit (1..10000) semaphores under the
// namespace with their unexpired permits (by the server's clock), sorted
// by resource. Per master, the SCAN (one pipeline per step) and one
// pipeline that reads the permits.
func (in *Inspector) Semaphores(ctx context.Context, limit int) ([]SemaphoreState, error) {
	o, err := in.read(ctx, "semaphores", partSems, limit)
	return o.Semaphores, err
}

// LastRuns returns up to limit (1..10000) interval jobs under the
// namespace with the start of their last run (Interval.LastRun), sorted
// by job. Per master, the SCAN (one pipeline per step) and one pipeline
// that reads the last runs. A last run that is not Unix ms is left out
// and named, as Overview names a key of another type.
func (in *Inspector) LastRuns(ctx context.Context, limit int) ([]LastRun, error) {
	o, err := in.read(ctx, "last runs", partRuns, limit)
	return o.LastRuns, err
}

// read checks limit, reads the parts asked for and sorts and cuts them.
func (in *Inspector) read(ctx context.Context, op string, parts, limit int) (Overview, error) {
	if limit < 1 || limit > maxAdminList {
		return Overview{}, pkg.Invalidf(op, "limit %d is not in 1..%d", limit, maxAdminList)
	}
	o, err := readOverview(ctx, in.rdb, in.ns, op, parts)
	if err != nil && !errors.Is(err, keys.ErrCorrupt) {
		return Overview{}, err
	}
	o.sortLimit(limit)
	return o, err
}

// maxAdminList bounds the limit of the Inspector's reads.
const maxAdminList = 10000

// HeldLock is a lease lock found by Inspector.Held. It carries the
// owner's label (WithOwner), never the owner ID itself: the ID is what
// proves ownership of the lease.
type HeldLock struct {
	ResourceType, ResourceID string
	OwnerLabel               string // "" when the holder set no label
	AcquiredAt               time.Time
	Lease                    time.Duration // as acquired (or last extended)
	Remaining                time.Duration // the key's remaining TTL
}

// SemaphoreState is a semaphore found by Inspector.Semaphores: its
// permits, soonest expiry first.
type SemaphoreState struct {
	ResourceType, ResourceID string
	Permits                  []Permit
}

// Permit is one held permit of a semaphore.
type Permit struct {
	OwnerLabel string
	ExpiresAt  time.Time
}

// LastRun is an interval job's last run found by Inspector.LastRuns.
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
// locks, the semaphores and the interval jobs' last runs (see
// Inspector.Overview).
type Overview struct {
	Held       []HeldLock
	Semaphores []SemaphoreState
	LastRuns   []LastRun
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
	var corrupt []error // every master's keys of another type, left out (under mu)
	err := keys.ForEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		found, err := scanmany.Keys(ctx, node, matches)
		if err != nil {
			return pkg.Fail(op, matches[0], nil, err)
		}
		var items []overviewItem
		for i, ks := range found {
			for _, k := range ks {
				if a, ok := matchArgs(ns, tmpls[i], k); ok {
					items = append(items, overviewItem{t: tmpls[i], key: k, args: a})
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
		_, _ = pipe.Exec(ctx) // every command carries its own error
		if err := now.Err(); err != nil {
			return pkg.Wrap(ctx, op, "", err)
		}
		nowMs := now.Val().UnixMilli()
		mu.Lock()
		defer mu.Unlock()
		for _, it := range items {
			// a key gone since the SCAN reads as redis.Nil, and is
			// left out; one of another type is left out and reported
			if skip, err := pkg.Skip(ctx, op, &corrupt, it.cmds()...); err != nil {
				return err
			} else if skip {
				continue
			}
			var why string
			switch it.t {
			case lockKey:
				var h HeldLock
				var ok bool
				if h, ok, why = heldLock(it.args, it.get.Val(), it.ttl.Val()); ok {
					out.Held = append(out.Held, h)
				}
			case semKey:
				if len(it.args) == 2 {
					out.Semaphores = append(out.Semaphores, semaphoreState(it.args, it.z.Val(), nowMs))
				}
			case cronKey:
				ms, err := strconv.ParseInt(it.get.Val(), 10, 64)
				if err != nil || ms < 0 {
					why = fmt.Sprintf("last run %.64q is not Unix ms", it.get.Val())
				} else if len(it.args) == 1 {
					out.LastRuns = append(out.LastRuns, LastRun{Job: it.args[0], LastRun: time.UnixMilli(ms).UTC()})
				}
			}
			if why != "" {
				corrupt = append(corrupt, pkg.Fail(op, it.key, nil, keys.Corrupt(it.key, errors.New(why))))
			}
		}
		return nil
	})
	if err == nil { // a master that failed outright fails the read, whatever the others left out
		err = errors.Join(corrupt...)
	}
	return out, err
}

// overviewItem is one key readOverview found, with the commands that
// read it.
type overviewItem struct {
	t    *keys.Template
	key  string
	args []string
	get  *redis.StringCmd
	ttl  *redis.DurationCmd
	z    *redis.ZSliceCmd
}

// cmds returns the commands queued for the item.
func (it *overviewItem) cmds() []redis.Cmder {
	var cs []redis.Cmder
	if it.get != nil {
		cs = append(cs, it.get)
	}
	if it.ttl != nil {
		cs = append(cs, it.ttl)
	}
	if it.z != nil {
		cs = append(cs, it.z)
	}
	return cs
}

// heldLock decodes a lease lock's value and TTL (PTTL's: -1 ns for none,
// -2 ns for a key gone). Not ok, with why "", for an interval job's claim
// record that holds no lease or a key gone since its GET; not ok, with
// why, for a value this package does not write or a lock without a TTL.
func heldLock(args []string, v string, remaining time.Duration) (h HeldLock, ok bool, why string) {
	if len(args) != 2 || remaining == -2 {
		return HeldLock{}, false, ""
	}
	parts := strings.Split(v, ":")
	var at, ttl int64
	var err1, err2 error
	if len(parts) == 3 || len(parts) == 4 {
		at, err1 = strconv.ParseInt(parts[1], 10, 64)
		ttl, err2 = strconv.ParseInt(parts[2], 10, 64)
	}
	switch {
	case len(parts) < 3 || len(parts) > 4 || err1 != nil || err2 != nil:
		return HeldLock{}, false, fmt.Sprintf("value %.64q is not {owner_id}:{timestamp}:{ttl}", v)
	case len(parts) == 4 && ttl == 0:
		return HeldLock{}, false, "" // a claim record without a lease
	case remaining < 0:
		return HeldLock{}, false, "a lock without a TTL"
	}
	return HeldLock{ResourceType: args[0], ResourceID: args[1], OwnerLabel: ownerLabel(parts[0]),
		AcquiredAt: time.UnixMilli(at).UTC(), Lease: time.Duration(ttl) * time.Millisecond, Remaining: remaining}, true, ""
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

// sortLimit sorts each part as the Inspector's methods document
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
