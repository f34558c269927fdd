package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed release.lua
	releaseSrc string
	//go:embed refresh.lua
	refreshSrc string
	//go:embed ttl.lua
	ttlSrc string

	lockKeys  = []*keys.Template{lockKey}
	releaseOp = pkg.Declare("release", releaseSrc, lockKeys, call.On(call.Conflict, ErrNotHeld), call.Shared())
	refreshOp = pkg.Declare("refresh", refreshSrc, lockKeys, call.On(call.Conflict, ErrNotHeld), call.Shared(), call.Durable())
	ttlOp     = pkg.Declare("ttl", ttlSrc, lockKeys, call.On(call.Conflict, ErrNotHeld), call.Shared())
)

// leaseOps are the operations on a held lease: of a lock, or of a
// semaphore's permit.
type leaseOps struct{ release, refresh, ttl *call.Op }

var (
	lockOps   = &leaseOps{release: releaseOp, refresh: refreshOp, ttl: ttlOp}
	permitOps = &leaseOps{release: semReleaseOp, refresh: semRefreshOp, ttl: semTTLOp}
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
	argv  [3]any // owner ID boxed once (the argument of release and ttl); acquire's arguments
	own   [2]string
	fence int64
	ops   *leaseOps
	rel   []any // release's arguments when they are not argv[:1] (WithWakeups)

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

func newLock(c *Client, ks []string, owner string, fence int64, ttl time.Duration, start time.Time, ops *leaseOps) *Lock {
	return &Lock{c: c, key: ks[0], keys: ks, owner: owner, argv: [3]any{owner}, fence: fence, ops: ops, ttl: ttl, deadline: start.Add(ttl)}
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
	left := l.deadline.Sub(l.c.now())
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
	if l.cause == nil && !l.c.now().Before(l.deadline) {
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
	if left := l.deadline.Sub(l.c.now()); left > 0 {
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
// every token issued before for the same resource (see Fencing tokens in
// docs/lock.md for how a resource checks it). It is 0 for semaphore permits.
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
// that deletes the key only while it holds this acquisition's owner ID.
// Context is cancelled and the watchdog stopped either way.
//
// It returns ErrNotHeld when the server finds the lease gone or held by
// someone else and the lease had already run out locally when Release was
// called. While the local deadline has not passed, the server cannot have
// let the lease go (the local deadline never comes after the server's
// expiry), so finding it gone means an earlier send of this same Release
// deleted it and lost its reply, which go-redis then sent again: Release
// reports that first outcome, success. (A failover that lost the lease, or
// a hand deletion, is reported as a success too: the fencing token is what
// protects the resource then.)
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	live := !l.lost()
	l.lose(context.Canceled)
	l.mu.Unlock()
	_, err := l.c.run.Run(ctx, l.ops.release, l.keys, l.releaseArgs()...)
	if live && errors.Is(err, ErrNotHeld) {
		return nil
	}
	return err
}

// releaseArgs is the release script's arguments: the owner ID, and the
// release channel to announce on with WithWakeups.
func (l *Lock) releaseArgs() []any {
	if l.rel != nil {
		return l.rel
	}
	return l.argv[:1]
}

// Refresh extends the lease to ttl from now (server time): one round trip,
// checked against the owner ID in Lua. It returns ErrNotHeld when the lease
// expired or someone else holds the resource (Context is then cancelled
// with ErrLockLost); once Context is done it returns, without contacting
// Redis, an error matching both ErrNotHeld and ErrLockLost. It returns
// ErrInvalid for a ttl outside (0, max TTL]. With WithDurability, a
// refresh done but acknowledged by fewer replicas than asked extends the
// lease and returns ErrNotDurable.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	const op = "refresh"
	if err := l.c.checkTTL(op, "ttl", ttl); err != nil {
		return err
	}
	l.mu.Lock()
	lost := l.lost()
	l.mu.Unlock()
	if lost {
		return pkg.Fail(op, l.key, ErrNotHeld, ErrLockLost)
	}
	start := l.c.now()
	_, err := l.c.run.Run(ctx, l.ops.refresh, l.keys, l.argv[0], l.c.msArg(ttl))
	return l.refreshed(start, ttl, err)
}

// refreshed applies the outcome err of a refresh to ttl sent at start.
func (l *Lock) refreshed(start time.Time, ttl time.Duration, err error) error {
	nd, err := call.NotDurable(err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(err, ErrNotHeld) {
		l.lose(fmt.Errorf("%w: %q is no longer held by %s", ErrLockLost, l.key, l.owner))
		return err
	}
	if err != nil {
		return err
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
			l.timer.Reset(l.deadline.Sub(l.c.now()))
		}
	}
	return nd
}

// TTL returns the remaining lease as the server sees it: one round trip.
// It returns ErrNotHeld when the caller no longer holds the lease.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	rep, err := l.c.run.Run(ctx, l.ops.ttl, l.keys, l.argv[:1]...)
	if err != nil {
		return 0, err
	}
	n := rep.Int(0)
	if err := rep.Err(); err != nil {
		return 0, err
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
		ttl, left, ctx := l.ttl, l.deadline.Sub(l.c.now()), l.ctx
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
