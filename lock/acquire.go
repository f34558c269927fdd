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
	//go:embed lib.lua
	libSrc string
	//go:embed acquire.lua
	acquireSrc string
	//go:embed fair_acquire.lua
	fairAcquireSrc string
	//go:embed fair_leave.lua
	fairLeaveSrc string

	// Every operation of this package is Shared: each recognises its own
	// request when a broken connection makes go-redis resend the pipeline
	// it rode in (see Guarantees in full in docs/lock.md).
	acquireOp = pkg.Declare("acquire", acquireSrc, []*keys.Template{lockKey, fenceKey},
		call.Uses(libSrc), call.On(call.Conflict, ErrNotObtained), call.Shared(), call.Durable())
	fairAcquireOp = pkg.Declare("acquire", fairAcquireSrc, []*keys.Template{lockKey, fenceKey, queueKey, waitersKey},
		call.Uses(libSrc), call.On(call.Conflict, ErrNotObtained), call.Shared(), call.Durable())
	fairLeaveOp = pkg.Declare("leave queue", fairLeaveSrc, []*keys.Template{queueKey, waitersKey}, call.Shared())
)

// defaultRetry is the strategy Acquire uses without WithRetry.
var defaultRetry = ExponentialBackoff(8*time.Millisecond, 256*time.Millisecond)

// AcquireOption configures one Acquire or TryAcquire call.
type AcquireOption func(*acquireConfig)

type acquireConfig struct {
	retry     RetryStrategy
	watchdog  time.Duration // 0: none; < 0: ttl/3
	fair      bool
	keep      time.Duration
	unbounded bool // Campaign: no end to the wait but the context's
}

// WithRetry sets how Acquire waits between attempts. A wait
// ends when the strategy gives up, when the context is done, or, when the
// context has no deadline, once the lease it asks for (its ttl) has
// passed, with a last attempt then, as redislock's Obtain does: a waiter
// never waits for ever on a holder that keeps its lease alive. Give the
// context a deadline to wait longer. Election.Campaign waits until the
// context is done. TryAcquire ignores the strategy (but refuses one that
// cannot work: see LinearBackoff and ExponentialBackoff).
//
// Default: ExponentialBackoff(8*time.Millisecond, 256*time.Millisecond).
func WithRetry(s RetryStrategy) AcquireOption { return func(o *acquireConfig) { o.retry = s } }

// WithWatchdog refreshes the lease every period (a period <= 0 means a third
// of the TTL) until Release or loss; a period not below the TTL fails with
// ErrInvalid, and once a Refresh shortens the TTL to at most the period the
// watchdog refreshes every third of the new TTL. When a refresh finds the
// lease lost, the Lock's Context is cancelled with ErrLockLost and the
// watchdog stops; transient errors are retried on the next tick and the
// Context is cancelled when the lease runs out locally. The watchdog does
// not watch the context passed to Acquire: call Release to stop it.
//
// Default: off.
func WithWatchdog(period time.Duration) AcquireOption {
	return func(o *acquireConfig) {
		o.watchdog = period
		if period <= 0 {
			o.watchdog = -1
		}
	}
}

// WithFairness serves Acquire calls for a resource in arrival order through the
// queue lock:queue:{resource_type}:{resource_id}. A waiter keeps its place
// for keep after each attempt (0 means 2s; outside the range fails with
// ErrInvalid), so a waiter that disappears stops blocking
// the others after keep; Acquire polls at least every keep/3 to hold its
// place. Callers that acquire the same resource without WithFairness
// are not queued and may overtake. With TryAcquire, WithFairness grants the lock
// only when nobody is waiting, and does not join the queue.
//
// Default: off (keep 0 means 2s). Range: 3ms to the max TTL.
func WithFairness(keep time.Duration) AcquireOption {
	return func(o *acquireConfig) {
		o.fair = true
		o.keep = keep
	}
}

// defaultFairKeep is how long a fair waiter keeps its place without polling
// unless WithFairness says otherwise.
const defaultFairKeep = 2 * time.Second

func (c *Client) config(op string, opts []AcquireOption) (acquireConfig, error) {
	cfg := acquireConfig{retry: defaultRetry}
	if len(opts) > 0 {
		// A copy for the options: the one they point to moves to the heap,
		// so calls without options allocate nothing here.
		o := cfg
		for _, f := range opts {
			f(&o)
		}
		cfg = o
	}
	if err := checkRetry(cfg.retry); err != nil {
		return cfg, pkg.Invalid(op, err)
	}
	if cfg.fair {
		if cfg.keep == 0 {
			cfg.keep = defaultFairKeep
		}
		if cfg.keep < 3*time.Millisecond {
			return cfg, pkg.Invalidf(op, "fair keep %v below 3ms", cfg.keep)
		}
	}
	return cfg, nil
}

// TryAcquire takes the lease on (resourceType, resourceID) for ttl if it is
// free, in one round trip (one Lua script that checks the key, issues the
// fencing token from server time and sets the key with its TTL). It returns
// ErrNotObtained when another owner holds it, and ErrInvalid (before any
// I/O) for an empty or oversize resourceType or resourceID, or a ttl outside
// (0, max TTL]. Options other than WithWatchdog and WithFairness are ignored.
//
// With WithDurability, a lease taken that fewer replicas acknowledged than
// asked is returned, held, with an error matching ErrNotDurable: use it
// knowing that a failover may lose it (its fencing token still protects
// the resource), or Release it.
func (c *Client) TryAcquire(ctx context.Context, resourceType, resourceID string, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, resourceType, resourceID, ttl, false, opts)
}

// Acquire is TryAcquire that waits while the resource is held: it retries as
// the RetryStrategy says (see WithRetry for the default) until it succeeds,
// the strategy gives up, or ctx is done; when ctx has no deadline, the wait
// ends after ttl (see WithRetry). A wait that ends while the resource is
// held returns an error matching ErrNotObtained (and ctx.Err() when the
// context ended it). Each attempt is one round trip. An attempt
// that fails on the wire (a timeout, a cut connection, a cluster error)
// ends the call with that error, never with ErrNotObtained, unless the
// context ended it after an earlier attempt found the resource held (the
// error then matches ErrNotObtained, the context's error and the
// attempt's own). Such
// an attempt may have taken the lease on the server with its reply lost:
// Acquire and TryAcquire then release that lease (and leave the fair
// queue) in the background, best effort, so that it does not block the
// resource for a whole TTL.
func (c *Client) Acquire(ctx context.Context, resourceType, resourceID string, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, resourceType, resourceID, ttl, true, opts)
}

func (c *Client) acquire(ctx context.Context, typ, id string, ttl time.Duration, wait bool, opts []AcquireOption) (*Lock, error) {
	const op = "acquire"
	cfg, err := c.config(op, opts)
	if err != nil {
		return nil, err
	}
	if err := c.checkTTL(op, "ttl", ttl); err != nil {
		return nil, err
	}
	if err := c.checkConfig(op, cfg, ttl); err != nil {
		return nil, err
	}
	r, err := c.resource(op, typ, id)
	if err != nil {
		return nil, err
	}
	// The Lock is made before the first attempt: it holds the script's
	// keys and arguments, so that an attempt allocates none of its own.
	owner := c.newOwner()
	l := &Lock{c: c, key: r.lock, owner: owner, ops: lockOps, ttl: ttl, own: [2]string{r.lock, r.fenc}}
	l.argv = [3]any{owner, c.msArg(ttl), c.fenceArg}
	ks := l.own[:]
	var q []string // the fair queue's keys
	if cfg.fair {
		qk, err := pkg.Key(op, queueKey, c.opt.ns, typ, id)
		if err != nil {
			return nil, err
		}
		wk, err := pkg.Key(op, waitersKey, c.opt.ns, typ, id)
		if err != nil {
			return nil, err
		}
		q = []string{qk, wk}
		ks = []string{r.lock, r.fenc, qk, wk}
	}
	join := "0"
	if wait {
		join = "1"
	}
	var wk *waker // WithWakeups: the release announcements, once subscribed
	if c.opt.wakeups {
		ch, err := pkg.Key(op, releasedChannel, c.opt.ns, typ, id)
		if err != nil {
			return nil, err
		}
		l.rel = []any{owner, ch}
		if wait {
			wk = &waker{ch: ch}
			defer wk.close()
		}
	}
	held := false // an attempt found the resource held
	end := time.Time{}
	if wait && !cfg.unbounded {
		end = waitEnd(ctx, ttl)
	}
	for attempt := 0; ; attempt++ {
		start := c.now()
		var rep call.Reply
		if cfg.fair {
			rep, err = c.run.Run(ctx, fairAcquireOp, ks, l.argv[0], l.argv[1], c.fenceArg, unit.MsCeil(cfg.keep), join, unit.MsCeil(c.opt.maxTTL))
		} else {
			rep, err = c.run.Run(ctx, acquireOp, ks, l.argv[:]...)
		}
		var nd error // ErrNotDurable: taken, not yet on enough replicas
		nd, err = call.NotDurable(err)
		switch {
		case err == nil:
			tok := rep.Int(0)
			if err := rep.Err(); err != nil {
				c.abandon(ctx, r.lock, q, owner)
				return nil, err
			}
			l.keys, l.fence, l.deadline = l.own[:1:1], tok, start.Add(ttl)
			l.startWatchdog(cfg.watchdog)
			return l, nd
		case errors.Is(err, ErrNotObtained):
			held = true
		case errors.Is(err, keys.ErrCorrupt):
			c.leave(q, owner, wait)
			return nil, err
		default:
			// On the wire: the script may have run and only its reply been
			// lost.
			c.abandon(ctx, r.lock, q, owner)
			if held && ctx.Err() != nil {
				// The wait ran out while the attempt was on the wire: the
				// resource was last seen held; the attempt's own error
				// goes with it, so an outage is not hidden.
				return nil, pkg.Fail(op, r.lock, ErrNotObtained, errors.Join(ctx.Err(), err))
			}
			return nil, err
		}
		if !wait {
			return nil, err
		}
		d := capWait(cfg.retry.Backoff(attempt), end)
		if d < 0 {
			c.leave(q, owner, true)
			return nil, err
		}
		if cfg.fair {
			d = min(d, cfg.keep/3)
		}
		if wk != nil && wk.subscribe(ctx, c) {
			// Subscribed just now: a release announced before then was
			// missed, so try again at once.
			continue
		}
		if serr := wk.sleep(ctx, d); serr != nil {
			c.leave(q, owner, true)
			return nil, pkg.Fail(op, r.lock, ErrNotObtained, serr)
		}
	}
}

// checkConfig validates the options that depend on the lease and the
// client's bounds: a watchdog period must be shorter than the TTL (else the
// lease runs out between refreshes), and a fair waiter's keep must be at most
// the max TTL (it bounds how long a vanished waiter blocks the queue).
func (c *Client) checkConfig(op string, cfg acquireConfig, ttl time.Duration) error {
	if cfg.watchdog >= ttl {
		return pkg.Invalidf(op, "watchdog period %v not below the TTL %v", cfg.watchdog, ttl)
	}
	if cfg.fair && cfg.keep > c.opt.maxTTL {
		return pkg.Invalidf(op, "fair keep %v above the max TTL %v", cfg.keep, c.opt.maxTTL)
	}
	return nil
}

// abandon cleans up after an attempt whose outcome is unknown (the script
// may have run on the server and its reply been lost to a timeout or a cut
// connection): in the background, best effort and bounded by a timeout, it
// releases the lease if that attempt took it (the owner ID is unique to this
// call, so no one else's lease is touched) and takes a fair waiter out of
// the queue, so that nobody waits a whole TTL for a lease no one holds.
func (c *Client) abandon(ctx context.Context, lockKey string, q []string, owner string) {
	c.cleanup(ctx, func(ctx context.Context) {
		_, _ = c.run.Run(ctx, releaseOp, []string{lockKey}, owner)
		if q != nil {
			_, _ = c.run.Run(ctx, fairLeaveOp, q, owner)
		}
	})
}

// cleanup runs fn in the background with a bounded context that keeps
// ctx's values but not its cancellation.
func (c *Client) cleanup(ctx context.Context, fn func(ctx context.Context)) {
	ctx = context.WithoutCancel(ctx)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
		defer cancel()
		fn(ctx)
	}()
}

// cleanupTimeout bounds a background cleanup.
const cleanupTimeout = 2 * time.Second

// leave takes a fair waiter out of the queue, best effort, so that the next
// waiter does not wait for its place to expire.
func (c *Client) leave(q []string, owner string, queued bool) {
	if q == nil || !queued {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = c.run.Run(ctx, fairLeaveOp, q, owner)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
