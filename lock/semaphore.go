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
	//go:embed sem_acquire.lua
	semAcquireSrc string
	//go:embed sem_release.lua
	semReleaseSrc string
	//go:embed sem_refresh.lua
	semRefreshSrc string
	//go:embed sem_ttl.lua
	semTTLSrc string
	//go:embed sem_count.lua
	semCountSrc string

	semKeys      = []*keys.Template{semKey}
	semAcquireOp = pkg.Declare("semaphore acquire", semAcquireSrc, semKeys, call.Needs(call.Batched, call.ExpireAt), call.On(call.Conflict, ErrNotObtained), call.Shared(), call.Durable())
	semReleaseOp = pkg.Declare("semaphore release", semReleaseSrc, semKeys, call.On(call.Conflict, ErrNotHeld), call.Shared())
	semRefreshOp = pkg.Declare("semaphore refresh", semRefreshSrc, semKeys, call.Needs(call.ExpireAt), call.On(call.Conflict, ErrNotHeld), call.Shared(), call.Durable())
	semTTLOp     = pkg.Declare("semaphore ttl", semTTLSrc, semKeys, call.On(call.Conflict, ErrNotHeld), call.Shared())
	semCountOp   = pkg.Declare("semaphore count", semCountSrc, semKeys, call.Shared())
)

// Semaphore admits up to a limit of concurrent holders of one resource.
// Each permit is a lease that expires on its own, so a crashed holder frees
// its permit when its TTL runs out. All permits live in one sorted set,
// lock:sem:{resource_type}:{resource_id} (owner ID -> expiry), whose TTL
// follows the latest expiry. A Semaphore is safe for concurrent use.
type Semaphore struct {
	c     *Client
	key   string
	keys  []string
	limit int
	rel   string // the release channel, with WithWakeups
}

// Semaphore returns the semaphore of (resourceType, resourceID) with limit
// permits. Every caller of one resource should use the same limit: each
// acquisition checks its own. It fails with ErrInvalid for an empty or
// oversize resource or a limit outside [1, 100000]; it does not
// contact Redis.
func (c *Client) Semaphore(resourceType, resourceID string, limit int) (*Semaphore, error) {
	const op = "semaphore"
	if limit < 1 || limit > maxPermits {
		return nil, pkg.Invalidf(op, "semaphore limit %d outside [1, %d]", limit, maxPermits)
	}
	k, err := pkg.Key(op, semKey, c.opt.ns, resourceType, resourceID)
	if err != nil {
		return nil, err
	}
	s := &Semaphore{c: c, key: k, keys: []string{k}, limit: limit}
	if c.opt.wakeups {
		if s.rel, err = c.releasedChannel(op, resourceType, resourceID); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Limit returns the number of permits.
func (s *Semaphore) Limit() int { return s.limit }

// TryAcquire takes a permit for ttl if fewer than Limit are live: one round
// trip (a Lua script that drops expired permits, counts and adds, using
// server time). It returns ErrNotObtained when all are held and ErrInvalid
// for a ttl outside (0, max TTL]. The permit is a *Lock whose Fence is 0;
// WithWatchdog applies, WithFairness fails with ErrInvalid, other options are
// ignored.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return s.acquire(ctx, ttl, false, opts)
}

// Acquire is TryAcquire that waits for a permit, retrying as the
// RetryStrategy says (see WithRetry for the default) until it succeeds, the
// strategy gives up, or ctx is done (without a deadline, until ttl has
// passed: see WithRetry). A failed wait matches ErrNotObtained
// (joined with ctx.Err() when the context ended it). WithFairness is not supported
// and fails with ErrInvalid. An attempt that fails on the wire gives back
// the permit it may have taken, in the background (see Client.Acquire).
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return s.acquire(ctx, ttl, true, opts)
}

// TryAcquireN takes n permits at once for one holder (a weighted
// acquisition), all or none, with TryAcquire's contract: one round trip,
// ErrNotObtained when fewer than n are free, ErrInvalid for n outside
// [1, Limit]. The permits share one lease: the *Lock's Release, Refresh
// and TTL act on all n, and Held counts each of them.
func (s *Semaphore) TryAcquireN(ctx context.Context, n int, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return s.acquireN(ctx, n, ttl, false, opts)
}

// AcquireN is TryAcquireN that waits until n permits are free together,
// as Acquire waits for one. Holders of single permits may keep taking
// the free ones meanwhile: a large n can wait long under a steady stream
// of small acquisitions.
func (s *Semaphore) AcquireN(ctx context.Context, n int, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return s.acquireN(ctx, n, ttl, true, opts)
}

func (s *Semaphore) acquire(ctx context.Context, ttl time.Duration, wait bool, opts []AcquireOption) (*Lock, error) {
	return s.acquireN(ctx, 1, ttl, wait, opts)
}

func (s *Semaphore) acquireN(ctx context.Context, n int, ttl time.Duration, wait bool, opts []AcquireOption) (*Lock, error) {
	const op = "semaphore acquire"
	if n < 1 || n > s.limit {
		return nil, pkg.Invalidf(op, "weight %d outside [1, limit %d]", n, s.limit)
	}
	cfg, err := s.c.config(op, opts)
	if err != nil {
		return nil, err
	}
	if cfg.fair {
		return nil, pkg.Invalidf(op, "a semaphore cannot be fair")
	}
	if err := s.c.checkTTL(op, "ttl", ttl); err != nil {
		return nil, err
	}
	if err := s.c.checkConfig(op, cfg, ttl); err != nil {
		return nil, err
	}
	owner := s.c.newOwner()
	var wk *waker // WithWakeups: the permits' release announcements
	if s.rel != "" && wait {
		wk = &waker{ch: s.rel}
		defer wk.close()
	}
	held := false
	end := time.Time{}
	if wait {
		end = waitEnd(ctx, ttl)
	}
	for attempt := 0; ; attempt++ {
		start := s.c.now()
		_, err := s.c.run.Run(ctx, semAcquireOp, s.keys, owner, unit.MsCeil(ttl), s.limit, unit.MsCeil(s.c.opt.maxTTL), n)
		nd, err := call.NotDurable(err)
		switch {
		case err == nil:
			l := newLock(s.c, s.keys, owner, 0, ttl, start, permitOps)
			if s.rel != "" {
				l.rel = s.releaseArgs(owner)
			}
			l.startWatchdog(cfg.watchdog)
			return l, nd
		case errors.Is(err, ErrNotObtained):
			held = true
		default:
			// On the wire: the script may have run and only its reply been
			// lost.
			s.abandon(ctx, owner)
			if held && ctx.Err() != nil {
				return nil, pkg.Fail(op, s.key, ErrNotObtained, errors.Join(ctx.Err(), err))
			}
			return nil, err
		}
		d := time.Duration(-1)
		if wait {
			d = capWait(cfg.retry.Backoff(attempt), end)
		}
		if d < 0 {
			return nil, err
		}
		if wk.subscribe(ctx, s.c) {
			// Subscribed just now: a release announced before then was
			// missed, so try again at once.
			continue
		}
		if serr := wk.sleep(ctx, d); serr != nil {
			return nil, pkg.Fail(op, s.key, ErrNotObtained, serr)
		}
	}
}

// abandon gives back, in the background and best effort, a permit that an
// attempt with an unknown outcome may have taken (see Client.abandon).
func (s *Semaphore) abandon(ctx context.Context, owner string) {
	s.c.cleanup(ctx, func(ctx context.Context) {
		_, _ = s.c.run.Run(ctx, semReleaseOp, s.keys, s.releaseArgs(owner)...)
	})
}

// releaseArgs is sem_release's arguments for owner: with WithWakeups the
// release announces itself on the resource's channel.
func (s *Semaphore) releaseArgs(owner string) []any {
	if s.rel == "" {
		return []any{owner}
	}
	return []any{owner, s.rel}
}

// Held returns the number of live permits: one round trip (read-only
// script with server time).
func (s *Semaphore) Held(ctx context.Context) (int, error) {
	rep, err := s.c.run.Run(ctx, semCountOp, s.keys, unit.MsCeil(s.c.opt.maxTTL))
	if err != nil {
		return 0, err
	}
	n := rep.Int(0)
	return int(n), rep.Err()
}
