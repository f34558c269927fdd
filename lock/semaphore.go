package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/script"
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

	semAcquireScript = script.New(semAcquireSrc)
	semReleaseScript = script.New(semReleaseSrc)
	semRefreshScript = script.New(semRefreshSrc)
	semTTLScript     = script.New(semTTLSrc)
	semCountScript   = script.New(semCountSrc)
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
}

// Semaphore returns the semaphore of (resourceType, resourceID) with limit
// permits. Every caller of one resource should use the same limit: each
// acquisition checks its own. It fails with ErrInvalid for an empty or
// oversize resource or a limit below 1; it does not contact Redis.
func (c *Client) Semaphore(resourceType, resourceID string, limit int) (*Semaphore, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: semaphore limit %d", ErrInvalid, limit)
	}
	k, err := buildKey(semKey, c.ns, resourceType, resourceID)
	if err != nil {
		return nil, err
	}
	return &Semaphore{c: c, key: k, keys: []string{k}, limit: limit}, nil
}

// Limit returns the number of permits.
func (s *Semaphore) Limit() int { return s.limit }

// TryAcquire takes a permit for ttl if fewer than Limit are live: one round
// trip (a Lua script that drops expired permits, counts and adds, using
// server time). It returns ErrNotObtained when all are held and ErrInvalid
// for a ttl outside (0, max TTL]. The permit is a *Lock whose Fence is 0;
// WithWatchdog applies, Fair fails with ErrInvalid, other options are
// ignored.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return s.acquire(ctx, ttl, false, opts)
}

// Acquire is TryAcquire that waits for a permit, retrying as the
// RetryStrategy says (see WithRetry for the default) until it succeeds, the
// strategy gives up, or ctx is done. A failed wait matches ErrNotObtained
// (joined with ctx.Err() when the context ended it). Fair is not supported
// and fails with ErrInvalid. An attempt that fails on the wire gives back
// the permit it may have taken, in the background (see Client.Acquire).
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return s.acquire(ctx, ttl, true, opts)
}

func (s *Semaphore) acquire(ctx context.Context, ttl time.Duration, wait bool, opts []AcquireOption) (*Lock, error) {
	cfg, err := s.c.config(opts)
	if err != nil {
		return nil, err
	}
	if cfg.fair {
		return nil, fmt.Errorf("%w: a semaphore cannot be fair", ErrInvalid)
	}
	if err := s.c.checkTTL("ttl", ttl); err != nil {
		return nil, err
	}
	if err := s.c.checkConfig(cfg, ttl); err != nil {
		return nil, err
	}
	owner := s.c.newOwner()
	for attempt := 0; ; attempt++ {
		start := time.Now()
		v, err := semAcquireScript.Run(ctx, s.c.rdb, s.keys, owner, ms(ttl), s.limit).Result()
		if err != nil {
			// The script may have run and only its reply been lost.
			s.abandon(ctx, owner)
			if ctx.Err() != nil {
				return nil, errors.Join(fmt.Errorf("%w: %q", ErrNotObtained, s.key), err)
			}
			return nil, fmt.Errorf("lock: semaphore acquire %q: %w", s.key, err)
		}
		res, err := ints(v, 2)
		if err != nil {
			s.abandon(ctx, owner)
			return nil, fmt.Errorf("lock: semaphore acquire %q: %w", s.key, err)
		}
		if res[0] == 1 {
			l := newLock(s.c, s.keys, owner, 0, ttl, start, true)
			l.startWatchdog(cfg.watchdog)
			return l, nil
		}
		d := time.Duration(-1)
		if wait {
			d = cfg.retry.Backoff(attempt)
		}
		if d < 0 {
			return nil, fmt.Errorf("%w: all %d permits of %q are held", ErrNotObtained, s.limit, s.key)
		}
		if err := sleep(ctx, d); err != nil {
			return nil, errors.Join(fmt.Errorf("%w: all %d permits of %q are held", ErrNotObtained, s.limit, s.key), err)
		}
	}
}

// abandon gives back, in the background and best effort, a permit that an
// attempt with an unknown outcome may have taken (see Client.abandon).
func (s *Semaphore) abandon(ctx context.Context, owner string) {
	s.c.cleanup(ctx, func(ctx context.Context) {
		_ = semReleaseScript.Run(ctx, s.c.rdb, s.keys, owner).Err()
	})
}

// Held returns the number of live permits: one round trip (read-only
// script with server time).
func (s *Semaphore) Held(ctx context.Context) (int, error) {
	v, err := semCountScript.Run(ctx, s.c.rdb, s.keys).Result()
	if err != nil {
		return 0, fmt.Errorf("lock: semaphore count %q: %w", s.key, err)
	}
	n, err := reply.Int64(v)
	if err != nil {
		return 0, fmt.Errorf("lock: semaphore count %q: %w", s.key, err)
	}
	return int(n), nil
}
