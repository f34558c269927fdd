package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed fence.lua
	fenceSrc string
	//go:embed acquire.lua
	acquireSrc string
	//go:embed fair_acquire.lua
	fairAcquireSrc string
	//go:embed fair_leave.lua
	fairLeaveSrc string

	acquireScript     = script.New(fenceSrc, acquireSrc)
	fairAcquireScript = script.New(fenceSrc, fairAcquireSrc)
	fairLeaveScript   = script.New(fairLeaveSrc)
)

// defaultRetry is the strategy Acquire uses without WithRetry.
var defaultRetry = ExponentialBackoff(8*time.Millisecond, 256*time.Millisecond)

// AcquireOption configures one Acquire or TryAcquire call.
type AcquireOption func(*acquireConfig)

type acquireConfig struct {
	retry    RetryStrategy
	watchdog time.Duration // 0: none; < 0: ttl/3
	fair     bool
	keep     time.Duration
}

// WithRetry sets how Acquire waits between attempts. The default is
// ExponentialBackoff(8*time.Millisecond, 256*time.Millisecond), until the
// context is done.
// TryAcquire ignores it.
func WithRetry(s RetryStrategy) AcquireOption { return func(o *acquireConfig) { o.retry = s } }

// WithWatchdog refreshes the lease every period (a period <= 0 means a third
// of the TTL) until Release or loss; a period not below the TTL fails with
// ErrInvalid, and once a Refresh shortens the TTL to at most the period the
// watchdog refreshes every third of the new TTL. When a refresh finds the
// lease lost, the Lock's Context is cancelled with ErrLockLost and the
// watchdog stops; transient errors are retried on the next tick and the
// Context is cancelled when the lease runs out locally. The watchdog does
// not watch the context passed to Acquire: call Release to stop it.
func WithWatchdog(period time.Duration) AcquireOption {
	return func(o *acquireConfig) {
		o.watchdog = period
		if period <= 0 {
			o.watchdog = -1
		}
	}
}

// Fair serves Acquire calls for a resource in arrival order through the
// queue lock:queue:{resource_type}:{resource_id}. A waiter keeps its place
// for keep after each attempt (0 means 2s; below 3ms or above the client's
// max TTL fails with ErrInvalid), so a waiter that disappears stops blocking
// the others after keep; Acquire polls at least every keep/3 to hold its
// place. Callers that acquire the same resource without Fair
// are not queued and may overtake. With TryAcquire, Fair grants the lock
// only when nobody is waiting, and does not join the queue.
func Fair(keep time.Duration) AcquireOption {
	return func(o *acquireConfig) {
		o.fair = true
		o.keep = keep
	}
}

// DefaultFairKeep is how long a fair waiter keeps its place without polling
// unless Fair says otherwise.
const DefaultFairKeep = 2 * time.Second

func (c *Client) config(opts []AcquireOption) (acquireConfig, error) {
	cfg := acquireConfig{retry: defaultRetry}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.retry == nil {
		return cfg, fmt.Errorf("%w: nil retry strategy", ErrInvalid)
	}
	if cfg.fair {
		if cfg.keep == 0 {
			cfg.keep = DefaultFairKeep
		}
		if cfg.keep < 3*time.Millisecond {
			return cfg, fmt.Errorf("%w: fair keep %v below 3ms", ErrInvalid, cfg.keep)
		}
	}
	return cfg, nil
}

// TryAcquire takes the lease on (resourceType, resourceID) for ttl if it is
// free, in one round trip (one Lua script that checks the key, issues the
// fencing token from server time and sets the key with its TTL). It returns
// ErrNotObtained when another owner holds it, and ErrInvalid (before any
// I/O) for an empty or oversize resourceType or resourceID, or a ttl outside
// (0, max TTL]. Options other than WithWatchdog and Fair are ignored.
func (c *Client) TryAcquire(ctx context.Context, resourceType, resourceID string, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, resourceType, resourceID, ttl, false, opts)
}

// Acquire is TryAcquire that waits while the resource is held: it retries as
// the RetryStrategy says (see WithRetry for the default) until it succeeds,
// the strategy gives up, or ctx is done. A failed wait returns an error
// matching ErrNotObtained, joined with ctx.Err() when the context ended it.
// Each attempt is one round trip. When an attempt fails on the wire (a
// timeout, a cut connection), it may have taken the lease on the server
// with its reply lost: Acquire and TryAcquire then release that lease (and
// leave the fair queue) in the background, best effort, so that it does not
// block the resource for a whole TTL.
func (c *Client) Acquire(ctx context.Context, resourceType, resourceID string, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return c.acquire(ctx, resourceType, resourceID, ttl, true, opts)
}

func (c *Client) acquire(ctx context.Context, typ, id string, ttl time.Duration, wait bool, opts []AcquireOption) (*Lock, error) {
	cfg, err := c.config(opts)
	if err != nil {
		return nil, err
	}
	if err := c.checkTTL("ttl", ttl); err != nil {
		return nil, err
	}
	if err := c.checkConfig(cfg, ttl); err != nil {
		return nil, err
	}
	r, err := c.resource(typ, id)
	if err != nil {
		return nil, err
	}
	var q []string
	if cfg.fair {
		qk, err := buildKey(queueKey, c.ns, typ, id)
		if err != nil {
			return nil, err
		}
		wk, err := buildKey(waitersKey, c.ns, typ, id)
		if err != nil {
			return nil, err
		}
		q = []string{r.lock, r.fenc, qk, wk}
	}
	owner := c.newOwner()
	var ks []string
	if !cfg.fair {
		ks = []string{r.lock, r.fenc}
	}
	for attempt := 0; ; attempt++ {
		start := time.Now()
		var cmdRes any
		var err error
		if cfg.fair {
			join := "0"
			if wait {
				join = "1"
			}
			cmdRes, err = fairAcquireScript.Run(ctx, c.rdb, q, owner, ms(ttl), c.fenceArg, ms(cfg.keep), join).Result()
		} else {
			cmdRes, err = acquireScript.Run(ctx, c.rdb, ks, owner, ms(ttl), c.fenceArg).Result()
		}
		if err != nil {
			// The script may have run and only its reply been lost.
			c.abandon(ctx, r.lock, q, owner)
			if ctx.Err() != nil {
				// The wait ran out while the attempt was on the wire.
				return nil, errors.Join(fmt.Errorf("%w: %q", ErrNotObtained, r.lock), err)
			}
			return nil, fmt.Errorf("lock: acquire %q: %w", r.lock, err)
		}
		res, err := ints(cmdRes, 2)
		if err != nil {
			c.abandon(ctx, r.lock, q, owner)
			return nil, fmt.Errorf("lock: acquire %q: %w", r.lock, err)
		}
		switch res[0] {
		case 1:
			lk := ks
			if cfg.fair {
				lk = q
			}
			l := newLock(c, lk[:1:1], owner, res[1], ttl, start, false)
			l.startWatchdog(cfg.watchdog)
			return l, nil
		case -1:
			c.leave(q, owner, wait)
			return nil, fmt.Errorf("lock: acquire %q: %w", r.lock, keys.Corrupt(r.fenc, errors.New("fence is not a number")))
		}
		if !wait {
			return nil, fmt.Errorf("%w: %q is held", ErrNotObtained, r.lock)
		}
		d := cfg.retry.Backoff(attempt)
		if d < 0 {
			c.leave(q, owner, true)
			return nil, fmt.Errorf("%w: %q is held", ErrNotObtained, r.lock)
		}
		if cfg.fair {
			d = min(d, cfg.keep/3)
		}
		if err := sleep(ctx, d); err != nil {
			c.leave(q, owner, true)
			return nil, errors.Join(fmt.Errorf("%w: %q is held", ErrNotObtained, r.lock), err)
		}
	}
}

// checkConfig validates the options that depend on the lease and the
// client's bounds: a watchdog period must be shorter than the TTL (else the
// lease runs out between refreshes), and a fair waiter's keep must be at most
// the max TTL (it bounds how long a vanished waiter blocks the queue).
func (c *Client) checkConfig(cfg acquireConfig, ttl time.Duration) error {
	if cfg.watchdog >= ttl {
		return fmt.Errorf("%w: watchdog period %v not below the TTL %v", ErrInvalid, cfg.watchdog, ttl)
	}
	if cfg.fair && cfg.keep > c.maxTTL {
		return fmt.Errorf("%w: fair keep %v above the max TTL %v", ErrInvalid, cfg.keep, c.maxTTL)
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
		_ = releaseScript.Run(ctx, c.rdb, []string{lockKey}, owner).Err()
		if q != nil {
			_ = fairLeaveScript.Run(ctx, c.rdb, q[2:], owner).Err()
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
	_ = fairLeaveScript.Run(ctx, c.rdb, q[2:], owner).Err()
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
