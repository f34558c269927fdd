package cache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redschema/redschema/internal/sub"
)

// event is one message of the events channel: "k {origin} {value key}"
// (the entry changed or was deleted; a load that others wait for landed,
// or gave up) or "t {origin} {tag}" (the tag was invalidated).
type event struct {
	kind   byte
	origin string
	arg    string
}

func decodeEvent(payload string) (event, error) {
	kind, rest, ok := strings.Cut(payload, " ")
	origin, arg, ok2 := strings.Cut(rest, " ")
	if !ok || !ok2 || len(kind) != 1 || (kind[0] != 'k' && kind[0] != 't') || origin == "" || arg == "" {
		return event{}, errors.New("not a cache event")
	}
	return event{kind: kind[0], origin: origin, arg: arg}, nil
}

// events is a Store's subscription to its events channel, opened when the
// local tier is on or the first time a load waits for another process,
// and the waiters it wakes.
type events struct {
	s *Store

	mu      sync.Mutex
	sub     *sub.Subscription[event]
	cancel  context.CancelFunc
	done    chan struct{}
	retry   time.Time // no new attempt to subscribe before
	waiters map[string]map[*waiter]struct{}
}

func newEvents(s *Store) *events {
	return &events{s: s, waiters: map[string]map[*waiter]struct{}{}}
}

// start subscribes, unless already subscribed.
func (e *events) start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.startLocked(ctx)
}

func (e *events) startLocked(ctx context.Context) error {
	if e.sub != nil {
		return nil
	}
	if e.s.closed.Load() {
		return ErrClosed
	}
	sb, err := sub.Open(ctx, e.s.rdb, []string{e.s.channel}, decodeEvent, 1024)
	if err != nil {
		e.retry = time.Now().Add(5 * time.Second)
		return err
	}
	pctx, cancel := context.WithCancel(context.Background())
	e.sub, e.cancel, e.done = sb, cancel, make(chan struct{})
	go e.pump(pctx, sb, e.done)
	return nil
}

func (e *events) pump(ctx context.Context, sb *sub.Subscription[event], done chan struct{}) {
	defer close(done)
	for {
		m, err := sb.Next(ctx)
		if err != nil {
			return
		}
		if m.Err != nil {
			e.s.report(ctx, m.Channel, m.Err)
			continue
		}
		e.dispatch(m.Value)
	}
}

func (e *events) dispatch(ev event) {
	own := ev.origin == e.s.origin
	switch ev.kind {
	case 'k':
		if e.s.local != nil && !own {
			e.s.local.del(ev.arg)
		}
		e.mu.Lock()
		for w := range e.waiters[ev.arg] {
			select {
			case w.ch <- struct{}{}:
			default:
			}
		}
		e.mu.Unlock()
	case 't':
		if e.s.local != nil && !own {
			e.s.local.delTag(ev.arg)
		}
	}
}

// stop ends the subscription.
func (e *events) stop() {
	e.mu.Lock()
	sb, cancel, done := e.sub, e.cancel, e.done
	e.sub = nil
	e.mu.Unlock()
	if sb != nil {
		cancel()
		_ = sb.Close()
		<-done
	}
}

// waiter is a load waiting for other processes' values.
type waiter struct {
	e       *events
	keys    []string
	ch      chan struct{}
	maxPoll time.Duration // the longest sleep between looks
}

// Poll intervals of a waiting load: woken by messages, it still looks
// every waitPoll (a message can be lost); without a subscription, every
// blindPoll.
const (
	waitPoll  = time.Second
	blindPoll = 100 * time.Millisecond
)

// wait registers a waiter for keys, subscribing first if need be (a
// failed subscription leaves the waiter polling).
func (e *events) wait(ctx context.Context, keys ...string) *waiter {
	w := &waiter{e: e, keys: keys, ch: make(chan struct{}, 1), maxPoll: blindPoll}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sub == nil && time.Now().After(e.retry) {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := e.startLocked(sctx); err != nil {
			e.s.report(ctx, e.s.channel, pkg.Fail("subscribe", e.s.channel, nil, err))
		}
		cancel()
	}
	if e.sub != nil {
		w.maxPoll = waitPoll
	}
	for _, k := range keys {
		if e.waiters[k] == nil {
			e.waiters[k] = map[*waiter]struct{}{}
		}
		e.waiters[k][w] = struct{}{}
	}
	return w
}

// done unregisters the waiter.
func (w *waiter) done() {
	e := w.e
	e.mu.Lock()
	for _, k := range w.keys {
		delete(e.waiters[k], w)
		if len(e.waiters[k]) == 0 {
			delete(e.waiters, k)
		}
	}
	e.mu.Unlock()
}
