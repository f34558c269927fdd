package lock

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"slices"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed multi_acquire.lua
	multiAcquireSrc string

	multiAcquireOp = pkg.Declare("acquire multi", multiAcquireSrc, []*keys.Template{lockKey, fenceKey},
		call.Uses(libSrc), call.On(call.Conflict, ErrNotObtained), call.Shared(), call.Durable())
)

// maxMulti bounds the number of resources of one AcquireMulti or
// TryAcquireMulti call.
const maxMulti = 256

// Resource names one resource, as the resourceType and resourceID
// arguments of Acquire do.
type Resource struct {
	Type, ID string
}

// MultiLock is the leases of several resources taken together by
// AcquireMulti or TryAcquireMulti: one *Lock per resource, each with its
// own fencing token, all with one owner ID. Its methods are safe for
// concurrent use.
type MultiLock struct {
	c     *Client
	locks []*Lock

	ctx    context.Context
	cancel context.CancelCauseFunc
}

// multiGroup is the resources of one multi acquisition whose keys share a
// slot: one script takes them all.
type multiGroup struct {
	slot int
	idx  []int    // indexes into the deduplicated resources
	keys []string // lock key, fence key, for each resource of idx
	rels []string // release channel of each resource of idx (WithWakeups)
}

// TryAcquireMulti takes the leases of all resources for ttl, or none. When
// the keys of all resources share a slot (a cluster hash slot: resources
// with the same ID, whatever their types, or any resources when the
// namespace has no hash tags, on a standalone server) it is one round trip,
// one script that checks every lease and takes them all or writes nothing.
// Otherwise the resources are grouped by slot and the groups taken one
// script each, in slot order; when a group finds a resource held, the
// groups already taken are released (one pipeline) before it returns, so a
// caller never holds part of a set. Another client may meanwhile see part
// of the set held for the span of one attempt, as if it were held whole.
//
// Duplicate resources count once. It returns ErrNotObtained (naming a held
// resource's key) when any is held by someone else, ErrInvalid (before any
// I/O) for no resources, more than 256, an empty or oversize type or
// ID, a ttl outside (0, max TTL], or WithFairness. WithWatchdog refreshes every
// lease. With WithDurability each group's script waits for replicas as
// Acquire does; a set some of whose leases fewer replicas acknowledged is
// returned held, with an error matching ErrNotDurable. An attempt that
// fails on the wire releases, in the background, whatever the attempt may
// have taken (see Acquire).
func (c *Client) TryAcquireMulti(ctx context.Context, resources []Resource, ttl time.Duration, opts ...AcquireOption) (*MultiLock, error) {
	return c.acquireMulti(ctx, resources, ttl, false, opts)
}

// AcquireMulti is TryAcquireMulti that waits while any resource is held:
// after a refused attempt (which holds nothing) it retries as the
// RetryStrategy says until it succeeds, the strategy gives up, or ctx is
// done (without a deadline, until ttl has passed: see WithRetry), with the
// errors of Acquire.
func (c *Client) AcquireMulti(ctx context.Context, resources []Resource, ttl time.Duration, opts ...AcquireOption) (*MultiLock, error) {
	return c.acquireMulti(ctx, resources, ttl, true, opts)
}

// multiGroups validates rs and groups their keys by slot, in slot order;
// it returns the deduplicated resources' lock and fence keys too.
func (c *Client) multiGroups(op string, rs []Resource) ([]multiGroup, []resource, error) {
	if len(rs) == 0 || len(rs) > maxMulti {
		return nil, nil, pkg.Invalidf(op, "%d resources outside [1, %d]", len(rs), maxMulti)
	}
	var res []resource
	seen := make(map[string]bool, len(rs))
	bySlot := map[int]int{} // slot -> index in groups
	var groups []multiGroup
	for _, r := range rs {
		k, err := c.resource(op, r.Type, r.ID)
		if err != nil {
			return nil, nil, err
		}
		if seen[k.lock] {
			continue
		}
		seen[k.lock] = true
		if c.opt.wakeups {
			if k.rel, err = c.releasedChannel(op, r.Type, r.ID); err != nil {
				return nil, nil, err
			}
		}
		slot := 0
		if !c.opt.ns.NoHashTags {
			slot = keys.Slot(k.lock)
		}
		gi, ok := bySlot[slot]
		if !ok {
			gi = len(groups)
			bySlot[slot] = gi
			groups = append(groups, multiGroup{slot: slot})
		}
		groups[gi].idx = append(groups[gi].idx, len(res))
		groups[gi].keys = append(groups[gi].keys, k.lock, k.fenc)
		groups[gi].rels = append(groups[gi].rels, k.rel)
		res = append(res, k)
	}
	slices.SortFunc(groups, func(a, b multiGroup) int { return cmp.Compare(a.slot, b.slot) })
	return groups, res, nil
}

func (c *Client) acquireMulti(ctx context.Context, rs []Resource, ttl time.Duration, wait bool, opts []AcquireOption) (*MultiLock, error) {
	const op = "acquire multi"
	cfg, err := c.config(op, opts)
	if err != nil {
		return nil, err
	}
	if cfg.fair {
		return nil, pkg.Invalidf(op, "a multi-resource lock cannot be fair")
	}
	if err := c.checkTTL(op, "ttl", ttl); err != nil {
		return nil, err
	}
	if err := c.checkConfig(op, cfg, ttl); err != nil {
		return nil, err
	}
	groups, res, err := c.multiGroups(op, rs)
	if err != nil {
		return nil, err
	}
	owner := c.newOwner()
	toks := make([]int64, len(res))
	var wk *waker // WithWakeups: the release announcements of a held resource
	if c.opt.wakeups && wait {
		wk = &waker{}
		defer wk.close()
	}
	held := false      // an attempt found a resource held
	end := time.Time{} // see WithRetry
	if wait {
		end = waitEnd(ctx, ttl)
	}
	for attempt := 0; ; attempt++ {
		start := c.now()
		var nd error // ErrNotDurable of some group
		taken := 0   // groups taken in this attempt
		busy := -1   // the resource found held, when the reply names it
		for _, g := range groups {
			var rep call.Reply
			rep, err = c.run.Run(ctx, multiAcquireOp, g.keys, owner, c.msArg(ttl), c.fenceArg)
			var ndg error
			ndg, err = call.NotDurable(err)
			if ndg != nil {
				nd = ndg
			}
			if errors.Is(err, ErrNotObtained) && rep.Len() > 0 {
				if i := rep.Int(0); i >= 1 && int(i) <= len(g.idx) {
					busy = g.idx[i-1]
				}
			}
			if err != nil {
				break
			}
			for j, i := range g.idx {
				toks[i] = rep.Int(j)
			}
			if err = rep.Err(); err != nil {
				taken++ // taken, with a reply this package did not expect
				break
			}
			taken++
		}
		switch {
		case err == nil:
			return c.newMultiLock(res, owner, toks, ttl, start, cfg.watchdog), nd
		case errors.Is(err, ErrNotObtained):
			held = true
			if rerr := c.rollback(ctx, groups[:taken], owner); rerr != nil {
				return nil, rerr
			}
		case errors.Is(err, keys.ErrCorrupt):
			if rerr := c.rollback(ctx, groups[:taken], owner); rerr != nil {
				return nil, errors.Join(err, rerr)
			}
			return nil, err
		default:
			// On the wire (or a surprise reply): the last script may have
			// run and only its reply been lost.
			c.abandonMulti(ctx, groups[:min(taken+1, len(groups))], owner)
			if held && ctx.Err() != nil {
				return nil, pkg.Fail(op, res[0].lock, ErrNotObtained, errors.Join(ctx.Err(), err))
			}
			return nil, err
		}
		if !wait {
			return nil, err
		}
		d := capWait(cfg.retry.Backoff(attempt), end)
		if d < 0 {
			return nil, err
		}
		if busy >= 0 && wk.follow(ctx, c, res[busy].rel) {
			// Subscribed just now: a release announced before then was
			// missed, so try again at once.
			continue
		}
		if serr := wk.sleep(ctx, d); serr != nil {
			return nil, pkg.Fail(op, res[0].lock, ErrNotObtained, serr)
		}
	}
}

// releaseCalls is one release per lock key of groups.
func releaseCalls(groups []multiGroup, owner string) []call.Call {
	var calls []call.Call
	for _, g := range groups {
		for j := 0; j < len(g.keys); j += 2 {
			args := []any{owner}
			if ch := g.rels[j/2]; ch != "" {
				args = append(args, ch) // wakes the waiters (WithWakeups)
			}
			calls = append(calls, call.Call{Op: releaseOp, Keys: g.keys[j : j+1], Args: args})
		}
	}
	return calls
}

// rollback releases the leases of groups, taken by this attempt, in one
// pipeline, bounded by cleanupTimeout and not by ctx's cancellation (a
// wait that runs out must still give back what it took). An error on the
// wire hands the release to the background (abandonMulti) and is
// returned: the caller holds nothing either way.
func (c *Client) rollback(ctx context.Context, groups []multiGroup, owner string) error {
	if len(groups) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, errs := c.run.RunMany(rctx, releaseCalls(groups, owner))
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrNotHeld) {
			c.abandonMulti(ctx, groups, owner)
			return err
		}
	}
	return nil
}

// abandonMulti releases, in the background and best effort, the leases of
// groups that an attempt with an unknown outcome may have taken.
func (c *Client) abandonMulti(ctx context.Context, groups []multiGroup, owner string) {
	calls := releaseCalls(groups, owner)
	c.cleanup(ctx, func(ctx context.Context) { _, _ = c.run.RunMany(ctx, calls) })
}

func (c *Client) newMultiLock(res []resource, owner string, toks []int64, ttl time.Duration, start time.Time, watchdog time.Duration) *MultiLock {
	m := &MultiLock{c: c, locks: make([]*Lock, len(res))}
	m.ctx, m.cancel = context.WithCancelCause(context.Background())
	for i, r := range res {
		l := &Lock{c: c, key: r.lock, owner: owner, argv: [3]any{owner}, fence: toks[i], ops: lockOps, ttl: ttl, deadline: start.Add(ttl)}
		l.own = [2]string{r.lock, r.fenc}
		l.keys = l.own[:1:1]
		if r.rel != "" {
			l.rel = []any{owner, r.rel}
		}
		m.locks[i] = l
		lctx := l.Context()
		context.AfterFunc(lctx, func() { m.cancel(context.Cause(lctx)) })
		l.startWatchdog(watchdog)
	}
	return m
}

// Locks returns the lease of each resource, in the order of the resources
// given (duplicates removed). Each has its own Key and Fence; releasing or
// refreshing one alone is allowed.
func (m *MultiLock) Locks() []*Lock { return slices.Clone(m.locks) }

// Fences returns the fencing token of each resource, in the order of
// Locks.
func (m *MultiLock) Fences() []int64 {
	f := make([]int64, len(m.locks))
	for i, l := range m.locks {
		f[i] = l.fence
	}
	return f
}

// Context returns a context cancelled as soon as any of the leases is lost
// or released (see Lock.Context); its cause is that lease's.
func (m *MultiLock) Context() context.Context { return m.ctx }

// Release gives every lease up, in one pipeline (one round trip per
// cluster node), as Lock.Release does for each. The errors of the leases
// that could not be released are joined.
func (m *MultiLock) Release(ctx context.Context) error {
	calls := make([]call.Call, len(m.locks))
	live := make([]bool, len(m.locks))
	for i, l := range m.locks {
		l.mu.Lock()
		live[i] = !l.lost()
		l.lose(context.Canceled)
		l.mu.Unlock()
		calls[i] = call.Call{Op: l.ops.release, Keys: l.keys, Args: l.releaseArgs()}
	}
	_, errs := m.c.run.RunMany(ctx, calls)
	for i, err := range errs {
		if live[i] && errors.Is(err, ErrNotHeld) {
			errs[i] = nil
		}
	}
	return errors.Join(errs...)
}

// Refresh extends every lease to ttl from now, in one pipeline, as
// Lock.Refresh does for each; the errors of the leases that could not be
// extended are joined (ErrNotHeld for a lost one, whose loss cancels
// Context).
func (m *MultiLock) Refresh(ctx context.Context, ttl time.Duration) error {
	const op = "refresh multi"
	if err := m.c.checkTTL(op, "ttl", ttl); err != nil {
		return err
	}
	calls := make([]call.Call, 0, len(m.locks))
	var errs []error
	var sent []*Lock
	for _, l := range m.locks {
		l.mu.Lock()
		lost := l.lost()
		l.mu.Unlock()
		if lost {
			errs = append(errs, pkg.Fail(op, l.key, ErrNotHeld, ErrLockLost))
			continue
		}
		sent = append(sent, l)
		calls = append(calls, call.Call{Op: l.ops.refresh, Keys: l.keys, Args: []any{l.argv[0], m.c.msArg(ttl)}})
	}
	start := m.c.now()
	_, res := m.c.run.RunMany(ctx, calls)
	for i, l := range sent {
		errs = append(errs, l.refreshed(start, ttl, res[i]))
	}
	return errors.Join(errs...)
}
