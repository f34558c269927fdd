package lock

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed leader.lua
	leaderSrc string

	leaderOp = pkg.Declare("leader", leaderSrc, []*keys.Template{lockKey, fenceKey}, call.Shared())
)

// ElectionResource is the resource type of elections: the lease of
// election name is lock:election:{name}.
const ElectionResource = "election"

// Election elects one leader among the processes that campaign for name:
// the leader holds the lease lock:election:{name}, kept alive by a
// watchdog, with a fencing token to guard what it writes. A process that
// crashes loses the lead when its lease runs out; one that resigns hands
// it over at once. An Election is safe for concurrent use; each process
// uses its own (one campaign at a time per Election).
type Election struct {
	c    *Client
	name string
	res  resource
	ttl  time.Duration

	mu   sync.Mutex
	held *Lock
}

// Leader is who holds an election's lease, as Election.Leader reads it.
type Leader struct {
	// Owner is the leader's owner ID: its WithOwner label, a dot and a
	// random part; "" when nobody leads.
	Owner string
	// Fence is the leader's fencing token.
	Fence int64
	// Since is the server time of the leader's acquisition or last
	// refresh, ms precision.
	Since time.Time
	// TTL is what remains of its lease.
	TTL time.Duration
}

// Label returns the WithOwner label of the leader's client ("" when it
// has none or nobody leads).
func (l Leader) Label() string {
	if i := strings.LastIndexByte(l.Owner, '.'); i >= 0 {
		return l.Owner[:i]
	}
	return ""
}

// Election returns the election name, whose leader holds a lease of ttl
// refreshed every ttl/3 by a watchdog. It fails with ErrInvalid for an
// empty or oversize name or a ttl outside [3ms, max TTL]; it does not
// contact Redis.
func (c *Client) Election(name string, ttl time.Duration) (*Election, error) {
	const op = "election"
	if err := c.checkTTL(op, "ttl", ttl); err != nil {
		return nil, err
	}
	if ttl < 3*time.Millisecond {
		return nil, pkg.Invalidf(op, "ttl %v below 3ms leaves the watchdog no time", ttl)
	}
	r, err := c.resource(op, ElectionResource, name)
	if err != nil {
		return nil, err
	}
	return &Election{c: c, name: name, res: r, ttl: ttl}, nil
}

// Campaign waits until this process leads, as Client.Acquire waits (opts
// apply, WithWatchdog is always on) but with no end other than ctx's
// (without a deadline it waits as long as another process leads, unlike
// Acquire, whose wait then ends after the ttl), and returns the leader's
// lease: its
// Context is cancelled when the lead is lost, its Fence guards the
// leader's writes. It returns ErrInvalid when this Election already leads
// (Resign first) and the errors of Acquire otherwise.
func (e *Election) Campaign(ctx context.Context, opts ...AcquireOption) (*Lock, error) {
	e.mu.Lock()
	if e.held != nil && e.held.Context().Err() == nil {
		e.mu.Unlock()
		return nil, pkg.Invalidf("campaign", "election %q: already the leader", e.name)
	}
	e.mu.Unlock()
	l, err := e.c.Acquire(ctx, ElectionResource, e.name, e.ttl, append(opts, WithWatchdog(0), unbounded)...)
	if l != nil {
		e.mu.Lock()
		e.held = l
		e.mu.Unlock()
	}
	return l, err
}

// Resign gives the lead up at once (Lock.Release) so that another
// campaigner takes it without waiting for the lease to run out. It does
// nothing when this Election does not lead, and a lead already lost
// (ErrNotHeld) is not an error; a network error is.
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	l := e.held
	e.held = nil
	e.mu.Unlock()
	if l == nil {
		return nil
	}
	if err := l.Release(ctx); err != nil && !errors.Is(err, ErrNotHeld) {
		return err
	}
	return nil
}

// Leader reads who leads now: one round trip, read-only. A zero Leader
// (Owner "") means nobody does.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	rep, err := e.c.run.Run(ctx, leaderOp, []string{e.res.lock, e.res.fenc})
	if err != nil || rep.Status != call.OK {
		return Leader{}, err
	}
	v, pttl, tok := rep.Str(0), rep.Int(1), rep.Int(2)
	if err := rep.Err(); err != nil {
		return Leader{}, err
	}
	ld := Leader{Fence: tok, TTL: time.Duration(pttl) * time.Millisecond}
	parts := strings.Split(v, ":")
	ld.Owner = parts[0]
	if len(parts) == 3 {
		if at, err := strconv.ParseInt(parts[1], 10, 64); err == nil && at > 0 {
			ld.Since = time.UnixMilli(at)
		}
	}
	return ld, nil
}

// Observe reads the leader every interval (at least 1ms) and sends it on
// the returned channel: first the current leader, then each change of
// owner (a zero Leader when the lead is vacant). A read that fails is
// tried again at the next tick and not sent. The channel is closed when
// ctx is done; a receiver that falls behind delays the reads, never loses
// the latest leader.
func (e *Election) Observe(ctx context.Context, interval time.Duration) <-chan Leader {
	interval = max(interval, time.Millisecond)
	ch := make(chan Leader)
	go func() {
		defer close(ch)
		t := time.NewTicker(interval)
		defer t.Stop()
		sent, last := false, ""
		for {
			if ld, err := e.Leader(ctx); err == nil && (!sent || ld.Owner != last) {
				select {
				case ch <- ld:
					sent, last = true, ld.Owner
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return ch
}

// unbounded lets a Campaign wait until its context is done: a waiter for
// the lead waits its turn, however long the leader leads.
func unbounded(o *acquireConfig) { o.unbounded = true }
