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
	//go:embed acquire.lua
	acquireSrc string
	//go:embed fair_acquire.lua
	fairAcquireSrc string
	//go:embed fair_leave.lua
	fairLeaveSrc string

	acquireScript     = script.New(acquireSrc)
	fairAcquireScript = script.New(fairAcquireSrc)
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
// of the TTL) until Release. When a refresh finds the lease lost, the Lock's
// Context is cancelled with ErrLockLost; transient errors are retried on the
// next tick and the Context is cancelled when the lease runs out locally.
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
// for keep after each attempt (0 means 2s), so a waiter that disappears
// stops blocking the others after keep; Acquire polls at least every keep/3
// to hold its place. Callers that acquire the same resource without Fair
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
// Each attempt is one round trip.
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
			c.leave(q, owner, attempt > 0 && wait)
			if ctx.Err() != nil {
				// The wait ran out while the attempt was on the wire.
				return nil, errors.Join(fmt.Errorf("%w: %q", ErrNotObtained, r.lock), err)
			}
			return nil, fmt.Errorf("lock: acquire %q: %w", r.lock, err)
		}
		res, err := ints(cmdRes, 2)
		if err != nil {
			c.leave(q, owner, wait)
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
