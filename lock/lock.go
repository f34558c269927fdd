package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/script"
)

var (
	//go:embed release.lua
	releaseSrc string
	//go:embed refresh.lua
	refreshSrc string
	//go:embed ttl.lua
	ttlSrc string

	releaseScript = script.New(releaseSrc)
	refreshScript = script.New(refreshSrc)
	ttlScript     = script.New(ttlSrc)
)

// Lock is a held lease: a lock from Acquire or TryAcquire, or a permit from
// a Semaphore. Its methods are safe for concurrent use.
//
// The lease is valid until its TTL runs out on the server. The Lock keeps a
// conservative local deadline (its TTL counted from just before the request
// that took or last refreshed it) and considers the lease lost at that
// deadline, when a refresh finds the lease gone, or on Release.
type Lock struct {
	c     *Client
	key   string
	keys  []string // script keys: the lock key, or the semaphore key
	owner string
	fence int64
	sem   bool

	mu       sync.Mutex
	ttl      time.Duration
	deadline time.Time
	cause    error // set once the lease is lost or released
	// Created on first use (Context or a watchdog), so that a lock that
	// never asks for them costs no timer.
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	wdDone chan struct{} // closed when the watchdog goroutine returns
	wdKick chan struct{} // a Refresh changed the TTL: recompute the wait
}

func newLock(c *Client, ks []string, owner string, fence int64, ttl time.Duration, start time.Time, sem bool) *Lock {
	return &Lock{c: c, key: ks[0], keys: ks, owner: owner, fence: fence, sem: sem, ttl: ttl, deadline: start.Add(ttl)}
}

// ensureCtx creates the context and its deadline timer; l.mu is held.
func (l *Lock) ensureCtx() {
	if l.ctx != nil {
		return
	}
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	if l.cause != nil {
		l.cancel(l.cause)
		return
	}
	left := time.Until(l.deadline)
	if left <= 0 {
		l.lose(l.ranOut())
		return
	}
	l.timer = time.AfterFunc(left, l.expire)
}

func (l *Lock) ranOut() error { return fmt.Errorf("%w: lease of %q ran out", ErrLockLost, l.key) }

// lose records the end of the lease; l.mu is held.
func (l *Lock) lose(cause error) {
	if l.cause != nil {
		return
	}
	l.cause = cause
	if l.cancel != nil {
		l.cancel(cause)
	}
	if l.timer != nil {
		l.timer.Stop()
	}
}

// lost reports whether the lease is over, marking it lost if its local
// deadline passed; l.mu is held.
func (l *Lock) lost() bool {
	if l.cause == nil && !time.Now().Before(l.deadline) {
		l.lose(l.ranOut())
	}
	return l.cause != nil
}

// expire runs when the local deadline passes without a refresh.
func (l *Lock) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cause != nil {
		return
	}
	if left := time.Until(l.deadline); left > 0 {
		l.timer.Reset(left)
		return
	}
	l.lose(l.ranOut())
}

// Key returns the Redis key of the lease (namespace included).
func (l *Lock) Key() string { return l.key }

// Token returns the owner ID written into the lock's value; it is unique to
// this acquisition.
func (l *Lock) Token() string { return l.owner }

// Fence returns the fencing token of this acquisition: strictly greater than
// every token issued before for the same resource (see the package doc for
// how a resource checks it). It is 0 for semaphore permits.
func (l *Lock) Fence() int64 { return l.fence }

// Context returns a context that is cancelled the moment the lease is
// considered lost: its local deadline passed without a refresh, a refresh
// found it held by no one or someone else, or it was released.
// context.Cause is ErrLockLost (wrapped) for a loss and context.Canceled
// after Release. It does not derive from the context passed to Acquire.
func (l *Lock) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ensureCtx()
	return l.ctx
}

// Release gives the lease up: one round trip, a compare-and-delete in Lua
// that deletes the key only while it holds this acquisition's owner ID. It
// returns ErrNotHeld when the lease had already expired or another owner
// holds the resource. Context is cancelled and the watchdog stopped either
// way.
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	l.lose(context.Canceled)
	l.mu.Unlock()
	var res any
	var err error
	if l.sem {
		res, err = semReleaseScript.Run(ctx, l.c.rdb, l.keys, l.owner).Result()
	} else {
		res, err = releaseScript.Run(ctx, l.c.rdb, l.keys, l.owner).Result()
	}
	if err != nil {
		return fmt.Errorf("lock: release %q: %w", l.key, err)
	}
	n, err := reply.Int64(res)
	if err != nil {
		return fmt.Errorf("lock: release %q: %w", l.key, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: release %q", ErrNotHeld, l.key)
	}
	return nil
}

// Refresh extends the lease to ttl from now (server time): one round trip,
// checked against the owner ID in Lua. It returns ErrNotHeld when the lease
// expired or someone else holds the resource (Context is then cancelled
// with ErrLockLost); once Context is done it returns, without contacting
// Redis, an error matching both ErrNotHeld and ErrLockLost. It returns
// ErrInvalid for a ttl outside (0, max TTL].
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	if err := l.c.checkTTL("ttl", ttl); err != nil {
		return err
	}
	l.mu.Lock()
	lost := l.lost()
	l.mu.Unlock()
	if lost {
		return fmt.Errorf("%w: %w: refresh %q", ErrNotHeld, ErrLockLost, l.key)
	}
	start := time.Now()
	var res any
	var err error
	if l.sem {
		res, err = semRefreshScript.Run(ctx, l.c.rdb, l.keys, l.owner, ms(ttl)).Result()
	} else {
		res, err = refreshScript.Run(ctx, l.c.rdb, l.keys, l.owner, ms(ttl)).Result()
	}
	if err != nil {
		return fmt.Errorf("lock: refresh %q: %w", l.key, err)
	}
	n, err := reply.Int64(res)
	if err != nil {
		return fmt.Errorf("lock: refresh %q: %w", l.key, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n != 1 {
		l.lose(fmt.Errorf("%w: %q is no longer held by %s", ErrLockLost, l.key, l.owner))
		return fmt.Errorf("%w: refresh %q", ErrNotHeld, l.key)
	}
	if l.cause == nil {
		l.deadline = start.Add(ttl)
		if ttl != l.ttl && l.wdKick != nil {
			select {
			case l.wdKick <- struct{}{}:
			default:
			}
		}
		l.ttl = ttl
		if l.timer != nil {
			l.timer.Reset(time.Until(l.deadline))
		}
	}
	return nil
}

// TTL returns the remaining lease as the server sees it: one round trip.
// It returns ErrNotHeld when the caller no longer holds the lease.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	var res any
	var err error
	if l.sem {
		res, err = semTTLScript.Run(ctx, l.c.rdb, l.keys, l.owner).Result()
	} else {
		res, err = ttlScript.Run(ctx, l.c.rdb, l.keys, l.owner).Result()
	}
	if err != nil {
		return 0, fmt.Errorf("lock: ttl %q: %w", l.key, err)
	}
	n, err := reply.Int64(res)
	if err != nil {
		return 0, fmt.Errorf("lock: ttl %q: %w", l.key, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: ttl %q", ErrNotHeld, l.key)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// startWatchdog starts the watchdog: period 0 means none, < 0 a third of
// the TTL.
func (l *Lock) startWatchdog(period time.Duration) {
	if period == 0 {
		return
	}
	l.mu.Lock()
	auto := period < 0
	l.ensureCtx()
	done := l.ctx.Done()
	l.wdDone = make(chan struct{})
	l.wdKick = make(chan struct{}, 1)
	kick := l.wdKick
	l.mu.Unlock()
	go l.watchdog(period, auto, done, kick)
}

// watchdog refreshes the lease until Release or loss, every period, or a
// third of the TTL when auto or when a Refresh shortened the TTL to at most
// the period. It returns as soon as Context is done.
func (l *Lock) watchdog(period time.Duration, auto bool, done, kick <-chan struct{}) {
	defer close(l.wdDone)
	t := time.NewTimer(l.watchdogWait(period, auto))
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-kick:
			t.Reset(l.watchdogWait(period, auto))
			continue
		case <-t.C:
		}
		l.mu.Lock()
		ttl, left, ctx := l.ttl, time.Until(l.deadline), l.ctx
		l.mu.Unlock()
		if left <= 0 {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, left)
		err := l.Refresh(ctx, ttl)
		cancel()
		if errors.Is(err, ErrNotHeld) || errors.Is(err, ErrLockLost) {
			return
		}
		// Other errors (network) are retried on the next tick; the local
		// deadline cancels Context if none succeeds in time.
		t.Reset(l.watchdogWait(period, auto))
	}
}

func (l *Lock) watchdogWait(period time.Duration, auto bool) time.Duration {
	l.mu.Lock()
	ttl := l.ttl
	l.mu.Unlock()
	if auto || period >= ttl {
		period = ttl / 3
	}
	return max(period, time.Millisecond)
}
