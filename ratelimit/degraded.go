package ratelimit

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// Degraded mode's clock: each instance beats every heartbeatEvery while
// Redis answers, an instance unseen for instanceLive is gone, and while
// degraded Redis is probed every probeEvery.
const (
	heartbeatEvery = time.Second
	instanceLive   = 3 * time.Second
	probeEvery     = 200 * time.Millisecond
	// maxLocalIDs bounds the local limiter's identifiers: when full, the
	// state of identifiers back at full capacity is dropped, and if none
	// is, everything (a burst may then be admitted again).
	maxLocalIDs = 1 << 16
)

// degraded is WithDegradedMode's state: the instance's heartbeat, the
// live instance count, the mode, and the in-process limiter used while
// Redis cannot answer.
type degraded struct {
	l        *Limiter
	key      string
	instance string
	count    atomic.Int64 // live instances at the last heartbeat, >= 1
	on       atomic.Bool  // degraded now
	onChange func(bool)
	modeMu   sync.Mutex // orders mode changes and their callbacks

	mu    sync.Mutex
	state map[string][]time.Time // per identifier, per rule: the local GCRA arrival time, kept across switches

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func newDegraded(l *Limiter, f func(bool)) (*degraded, error) {
	k, err := instancesKey.Key(l.opt.ns)
	if err != nil {
		return nil, pkg.Invalid("new", err)
	}
	d := &degraded{l: l, key: k, instance: requestID(), onChange: f, state: map[string][]time.Time{},
		stop: make(chan struct{}), done: make(chan struct{})}
	d.count.Store(1)
	go d.beat()
	return d, nil
}

// beat announces the instance every heartbeatEvery and, while degraded,
// probes Redis every probeEvery, leaving degraded mode when it answers.
func (d *degraded) beat() {
	defer close(d.done)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), heartbeatEvery)
		rep, err := d.l.run.Run(ctx, heartbeatOp, []string{d.key}, d.instance, instanceLive.Milliseconds(), "1")
		cancel()
		if err == nil {
			n := rep.Int(0)
			if rep.Err() == nil && n >= 1 {
				d.count.Store(n)
			}
			d.set(false)
			d.mu.Lock()
			d.sweep(time.Now()) // while Redis decides, the local state only refills
			d.mu.Unlock()
		} else if outage(context.Background(), err) {
			d.set(true)
		}
		wait := heartbeatEvery
		if d.on.Load() {
			wait = probeEvery
		}
		select {
		case <-d.stop:
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = d.l.run.Run(ctx, heartbeatOp, []string{d.key}, d.instance, instanceLive.Milliseconds(), "0")
			cancel()
			return
		case <-time.After(wait):
		}
	}
}

// set changes the mode and calls onChange when it changed. The local
// state outlives a return to Redis: a switch back to degraded mode finds
// each identifier's local limit where it was left, refilled at the local
// rate since, so that a flapping connection (a reply that was in flight
// when the outage began switches back for one heartbeat) does not grant a
// fresh local burst at each switch. The heartbeat drops the identifiers
// back at full capacity while Redis answers.
func (d *degraded) set(on bool) {
	if d.on.Load() == on {
		return
	}
	d.modeMu.Lock()
	defer d.modeMu.Unlock()
	if d.on.Swap(on) == on {
		return
	}
	if d.onChange != nil {
		d.onChange(on)
	}
}

// outage reports whether err from a check means Redis cannot answer (and
// the caller's context is still live): a network error, a timeout, a
// cluster error; not bad input, corrupt state or the caller's deadline.
func outage(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, ErrInvalid) || errors.Is(err, keys.ErrCorrupt) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN", "connection refused"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// allow decides in process: each rule is a GCRA bucket of Rate/n per
// Period with a burst of capacity/n (at least 1), n the live instances
// at the last heartbeat; all or nothing, as in Redis. With atMost, cost
// is the most to take: it takes what every bucket has, from 1. It returns
// the units granted. A cost above a rule's full capacity is refused with
// RetryAfter = Never, as Redis refuses it.
//
// It is the documented local fallback, not a second implementation to
// keep in step: TestDegradedGCRAMatchesLua holds its decisions, for one
// instance, to the Lua GCRA's (allow.lua and gcra.lua).
func (d *degraded) allow(id string, cost int, atMost bool) (Result, int) {
	return d.allowAt(id, cost, atMost, time.Now())
}

// allowAt is allow at time now.
func (d *degraded) allowAt(id string, cost int, atMost bool, now time.Time) (Result, int) {
	n := d.count.Load()
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.state[id]
	if !ok {
		if len(d.state) >= maxLocalIDs {
			d.sweep(now)
		}
		st = make([]time.Time, len(d.l.policy))
	}
	want := cost
	if atMost {
		cost = 1
	}
	res := Result{Allowed: true, Local: true, Remaining: -1}
	tats := make([]time.Time, len(st))
	never := false
	for i, r := range d.l.policy {
		capa := max(1, r.capacity()/int(n))
		rate := max(1, r.Limit.Rate/int(n))
		T := r.Limit.Period / time.Duration(rate)
		tat := st[i]
		if tat.Before(now) {
			tat = now
		}
		tats[i] = tat
		avail := capa - int((tat.Sub(now)+T-1)/T)
		switch {
		case cost > r.capacity():
			res.Allowed, never = false, true
		case avail < cost:
			res.Allowed = false
			res.RetryAfter = max(res.RetryAfter, tat.Sub(now)-time.Duration(capa-cost)*T)
		}
		if atMost && avail < want {
			want = max(avail, 0)
		}
		if res.Remaining < 0 || avail < res.Remaining {
			res.Limit, res.Remaining, res.Rule, res.ResetAfter = capa, max(0, avail), i, tat.Sub(now)
		}
	}
	if never {
		res.RetryAfter = Never
	}
	if !res.Allowed {
		return res, 0
	}
	if atMost {
		cost = want
	}
	for i, r := range d.l.policy {
		rate := max(1, r.Limit.Rate/int(n))
		T := r.Limit.Period / time.Duration(rate)
		st[i] = tats[i].Add(time.Duration(cost) * T)
	}
	d.state[id] = st
	res.Remaining = max(0, res.Remaining-cost)
	res.ResetAfter = st[res.Rule].Sub(now)
	return res, cost
}

// sweep drops identifiers back at full capacity, or everything.
func (d *degraded) sweep(now time.Time) {
	for id, st := range d.state {
		full := true
		for _, t := range st {
			full = full && !t.After(now)
		}
		if full {
			delete(d.state, id)
		}
	}
	if len(d.state) >= maxLocalIDs {
		clear(d.state)
	}
}

func (d *degraded) close() {
	d.once.Do(func() { close(d.stop) })
	<-d.done
}
