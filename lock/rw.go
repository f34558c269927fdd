package lock

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed rw_read.lua
	rwReadSrc string
	//go:embed rw_write.lua
	rwWriteSrc string
	//go:embed rw_leave.lua
	rwLeaveSrc string

	rwReadOp = pkg.Declare("read lock", rwReadSrc, []*keys.Template{rwKey, readersKey, writersKey},
		call.Needs(call.ExpireAt), call.On(call.Conflict, ErrNotObtained), call.Shared(), call.Durable())
	rwWriteOp = pkg.Declare("write lock", rwWriteSrc, []*keys.Template{rwKey, fenceKey, readersKey, writersKey},
		call.Uses(libSrc), call.Needs(call.ExpireAt), call.On(call.Conflict, ErrNotObtained), call.Shared(), call.Durable())
	rwLeaveOp = pkg.Declare("leave writers", rwLeaveSrc, []*keys.Template{writersKey}, call.Shared())
)

// RWKeep is how long a writer waiting in Lock turns new readers away
// without polling again; Lock polls at least every RWKeep/3, so a waiting
// writer that vanished stops keeping readers out within RWKeep.
const RWKeep = 2 * time.Second

// RWMutex is a read-write lock on one resource: any number of readers
// (RLock) or one writer (Lock), never both. A writer waiting in Lock turns
// new readers away until it gets the lock or gives up (writer
// preference), so a stream of readers cannot starve writers; a stream of
// writers can starve readers. Every lease, a reader's or the writer's, is
// a *Lock that expires on its own, with a watchdog on request
// (WithWatchdog). A writer's lease carries a fencing token from the
// resource's fence counter (the rule of Acquire); a reader's Fence is 0.
// An RWMutex is safe for concurrent use.
//
// The writer's lease is lock:rw:{resource_type}:{resource_id}, not the
// resource's plain lease: Client.Acquire on the same resource excludes
// neither readers nor writers.
type RWMutex struct {
	c        *Client
	writer   string
	readKeys []string // writer, readers, waiting writers
	wKeys    []string // writer, fence, readers, waiting writers
	rel      string   // the release channel, with WithWakeups
}

// RWMutex returns the read-write lock of (resourceType, resourceID). It
// fails with ErrInvalid for an empty or oversize resource; it does not
// contact Redis.
func (c *Client) RWMutex(resourceType, resourceID string) (*RWMutex, error) {
	const op = "rw mutex"
	var ks [4]string
	for i, t := range []*keys.Template{rwKey, fenceKey, readersKey, writersKey} {
		k, err := pkg.Key(op, t, c.opt.ns, resourceType, resourceID)
		if err != nil {
			return nil, err
		}
		ks[i] = k
	}
	m := &RWMutex{c: c, writer: ks[0], readKeys: []string{ks[0], ks[2], ks[3]}, wKeys: ks[:]}
	if c.opt.wakeups {
		ch, err := c.releasedChannel(op, resourceType, resourceID)
		if err != nil {
			return nil, err
		}
		m.rel = ch
	}
	return m, nil
}

// TryRLock takes a reader's lease for ttl if no writer holds the lock or
// waits for it: one round trip, one script on server time. It returns
// ErrNotObtained otherwise and ErrInvalid for a ttl outside (0, max TTL]
// or WithFairness. The lease is a *Lock whose Fence is 0; its Release, Refresh,
// TTL and Context work as a permit's. WithWatchdog applies; with
// WithDurability the lease waits for replicas as Acquire's does.
func (m *RWMutex) TryRLock(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return m.lock(ctx, ttl, false, false, opts)
}

// RLock is TryRLock that waits, retrying as the RetryStrategy says until
// it succeeds, the strategy gives up or ctx is done (without a deadline,
// until ttl has passed: see WithRetry), with the errors of Client.Acquire.
func (m *RWMutex) RLock(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return m.lock(ctx, ttl, true, false, opts)
}

// TryLock takes the writer's lease for ttl if no writer and no live
// reader holds the lock: one round trip, one script that also issues the
// lease's fencing token. It returns ErrNotObtained otherwise (and does
// not keep readers out), ErrInvalid for a ttl outside (0, max TTL] or
// WithFairness. WithWatchdog and WithDurability apply as to Acquire.
func (m *RWMutex) TryLock(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return m.lock(ctx, ttl, false, true, opts)
}

// Lock is TryLock that waits, retrying as the RetryStrategy says (at least
// every RWKeep/3) until it succeeds, the strategy gives up or ctx is done
// (without a deadline, until ttl has passed: see WithRetry), with the
// errors of Client.Acquire. While it waits, new readers are
// turned away; readers that hold the lock keep it until they release it or
// their lease ends.
func (m *RWMutex) Lock(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return m.lock(ctx, ttl, true, true, opts)
}

func (m *RWMutex) lock(ctx context.Context, ttl time.Duration, wait, write bool, opts []AcquireOption) (*Lock, error) {
	op := "read lock"
	if write {
		op = "write lock"
	}
	c := m.c
	cfg, err := c.config(op, opts)
	if err != nil {
		return nil, err
	}
	if cfg.fair {
		return nil, pkg.Invalidf(op, "a read-write lock cannot be fair")
	}
	if err := c.checkTTL(op, "ttl", ttl); err != nil {
		return nil, err
	}
	if err := c.checkConfig(op, cfg, ttl); err != nil {
		return nil, err
	}
	owner := c.newOwner()
	var keep int64 // a waiting writer's place
	if write && wait {
		keep = unit.MsCeil(RWKeep)
	}
	var wk *waker // WithWakeups: the writer's and the last reader's release announcements
	if m.rel != "" && wait {
		wk = &waker{ch: m.rel}
		defer wk.close()
	}
	held := false
	end := time.Time{} // see WithRetry
	if wait {
		end = waitEnd(ctx, ttl)
	}
	for attempt := 0; ; attempt++ {
		start := c.now()
		var rep call.Reply
		if write {
			rep, err = c.run.Run(ctx, rwWriteOp, m.wKeys, owner, c.msArg(ttl), c.fenceArg, keep, unit.MsCeil(c.opt.maxTTL))
		} else {
			rep, err = c.run.Run(ctx, rwReadOp, m.readKeys, owner, c.msArg(ttl), unit.MsCeil(c.opt.maxTTL))
		}
		var nd error
		nd, err = call.NotDurable(err)
		switch {
		case err == nil && write:
			tok := rep.Int(0)
			if err := rep.Err(); err != nil {
				m.abandon(ctx, owner, write)
				return nil, err
			}
			l := newLock(c, m.wKeys[:1:1], owner, tok, ttl, start, lockOps)
			if m.rel != "" {
				l.rel = m.releaseArgs(owner, true)
			}
			l.startWatchdog(cfg.watchdog)
			return l, nd
		case err == nil:
			l := newLock(c, m.readKeys[1:2:2], owner, 0, ttl, start, permitOps)
			if m.rel != "" {
				l.rel = m.releaseArgs(owner, false)
			}
			l.startWatchdog(cfg.watchdog)
			return l, nd
		case errors.Is(err, ErrNotObtained):
			held = true
		case errors.Is(err, keys.ErrCorrupt):
			m.leave(owner, keep > 0)
			return nil, err
		default:
			m.abandon(ctx, owner, write)
			if held && ctx.Err() != nil {
				return nil, pkg.Fail(op, m.writer, ErrNotObtained, errors.Join(ctx.Err(), err))
			}
			return nil, err
		}
		if !wait {
			return nil, err
		}
		d := capWait(cfg.retry.Backoff(attempt), end)
		if d < 0 {
			m.leave(owner, keep > 0)
			return nil, err
		}
		if keep > 0 {
			d = min(d, RWKeep/3)
		}
		if wk.subscribe(ctx, c) {
			// Subscribed just now: a release announced before then was
			// missed, so try again at once.
			continue
		}
		if serr := wk.sleep(ctx, d); serr != nil {
			m.leave(owner, keep > 0)
			return nil, pkg.Fail(op, m.writer, ErrNotObtained, serr)
		}
	}
}

// leave takes a writer that gave up out of the waiting writers, best
// effort, so that readers are not kept out until its place runs out.
func (m *RWMutex) leave(owner string, waiting bool) {
	if !waiting {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = m.c.run.Run(ctx, rwLeaveOp, m.wKeys[3:], m.releaseArgs(owner, true)...)
}

// abandon gives back, in the background and best effort, the lease that
// an attempt with an unknown outcome may have taken (see Client.abandon).
func (m *RWMutex) abandon(ctx context.Context, owner string, write bool) {
	m.c.cleanup(ctx, func(ctx context.Context) {
		if write {
			_, _ = m.c.run.Run(ctx, releaseOp, m.wKeys[:1], m.releaseArgs(owner, true)...)
			_, _ = m.c.run.Run(ctx, rwLeaveOp, m.wKeys[3:], owner)
			return
		}
		_, _ = m.c.run.Run(ctx, semReleaseOp, m.readKeys[1:2], m.releaseArgs(owner, false)...)
	})
}

// releaseArgs is the release script's arguments for owner's lease (the
// writer's, or a reader's): with WithWakeups the writer's release
// announces itself on the resource's channel, waking readers and writers,
// and a reader's only when it leaves no live reader, waking a waiting
// writer.
func (m *RWMutex) releaseArgs(owner string, write bool) []any {
	switch {
	case m.rel == "":
		return []any{owner}
	case write:
		return []any{owner, m.rel}
	default:
		return []any{owner, m.rel, "1"}
	}
}
