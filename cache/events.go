package cache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/sub"
)

// event is one message of the events channel: "k {origin} {value key}"
// (the entry changed or was deleted; a load that others wait for landed,
// or gave up; the Sets of one round trip name all their keys, separated
// by newlines, which no key holds) or "t {origin} {tag}" (the tag was
// invalidated).
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
//
// A script publishes on the node that runs it, its keys' node. On a
// single server and on a Cluster (which forwards every PUBLISH to every
// node) one subscription hears them all. A Ring does not forward: each
// shard's subscribers hear only what its scripts publish, so on a Ring
// the Store subscribes on every shard, and every shardCheck it subscribes
// on shards that came up or were added since (Ring.SetAddrs) and drops
// those gone.
type events struct {
	s *Store

	mu      sync.Mutex
	subs    map[*redis.Client]*listener // key nil: the one subscription of a client that is not a Ring
	on      bool                        // subscribed
	stopped chan struct{}               // closed by stop: ends the Ring's shard check
	checkWG sync.WaitGroup
	retry   time.Time // no new attempt to subscribe before

	// wmu guards waiters apart from mu: a listener's reader takes it, and
	// listeners are closed (their readers waited for) under mu.
	wmu     sync.Mutex
	waiters map[string]map[*waiter]struct{}
}

// listener is one subscription and the goroutine that reads it.
type listener struct {
	sub    *sub.Subscription[event]
	cancel context.CancelFunc
	done   chan struct{}
}

// shardCheck is how often a Store on a Ring looks for shards it does not
// listen to yet (the shard list is in memory: no round trip).
const shardCheck = time.Second

func newEvents(s *Store) *events {
	return &events{s: s, subs: map[*redis.Client]*listener{}, waiters: map[string]map[*waiter]struct{}{}}
}

// start subscribes, unless already subscribed.
func (e *events) start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.startLocked(ctx)
}

func (e *events) startLocked(ctx context.Context) error {
	if e.on {
		return nil
	}
	if e.s.closed.Load() {
		return ErrClosed
	}
	ring, isRing := e.s.rdb.(*redis.Ring)
	if !isRing {
		l, err := e.listen(ctx, e.s.rdb)
		if err != nil {
			e.retry = time.Now().Add(5 * time.Second)
			return err
		}
		e.subs[nil], e.on = l, true
		return nil
	}
	if err := e.listenShardsLocked(ctx, ring); err != nil {
		e.stopLocked()
		e.retry = time.Now().Add(5 * time.Second)
		return err
	}
	e.on, e.stopped = true, make(chan struct{})
	e.checkWG.Add(1)
	go e.checkShards(ring, e.stopped)
	return nil
}

// listenShardsLocked subscribes on every live shard of ring not listened
// to yet, and drops the listeners of shards no longer in it.
func (e *events) listenShardsLocked(ctx context.Context, ring *redis.Ring) error {
	live := ring.GetShardClients()
	if len(live) == 0 {
		return errors.New("no live ring shard")
	}
	keep := map[*redis.Client]bool{}
	var errs []error
	for _, c := range live {
		keep[c] = true
		if e.subs[c] != nil {
			continue
		}
		l, err := e.listen(ctx, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e.subs[c] = l
	}
	for c, l := range e.subs {
		if !keep[c] {
			l.close()
			delete(e.subs, c)
		}
	}
	return errors.Join(errs...)
}

// checkShards keeps a Ring's listeners on its live shards until stopped.
func (e *events) checkShards(ring *redis.Ring, stopped chan struct{}) {
	defer e.checkWG.Done()
	t := time.NewTicker(shardCheck)
	defer t.Stop()
	for {
		select {
		case <-stopped:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		e.mu.Lock()
		var err error
		if e.on {
			err = e.listenShardsLocked(ctx, ring)
		}
		e.mu.Unlock()
		cancel()
		if err != nil {
			e.s.report(ctx, e.s.channel, pkg.Fail("subscribe", e.s.channel, nil, err))
		}
	}
}

// listen subscribes c to the events channel and starts reading it.
func (e *events) listen(ctx context.Context, c redis.UniversalClient) (*listener, error) {
	sb, err := sub.Open(ctx, c, []string{e.s.channel}, decodeEvent, 1024)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	l := &listener{sub: sb, cancel: cancel, done: make(chan struct{})}
	go e.pump(pctx, sb, l.done)
	return l, nil
}

func (l *listener) close() {
	l.cancel()
	_ = l.sub.Close()
	<-l.done
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
			for key := range strings.SplitSeq(ev.arg, "\n") {
				e.s.local.del(key)
			}
		}
		e.wmu.Lock()
		for key := range strings.SplitSeq(ev.arg, "\n") {
			for w := range e.waiters[key] {
				select {
				case w.ch <- struct{}{}:
				default:
				}
			}
		}
		e.wmu.Unlock()
	case 't':
		if e.s.local != nil && !own {
			e.s.local.delTag(ev.arg)
		}
	}
}

// stop ends the subscriptions.
func (e *events) stop() {
	e.mu.Lock()
	stopped := e.stopped
	e.stopped = nil
	e.mu.Unlock()
	if stopped != nil {
		close(stopped)
		e.checkWG.Wait()
	}
	e.mu.Lock()
	e.stopLocked()
	e.mu.Unlock()
}

// stopLocked closes every listener.
func (e *events) stopLocked() {
	for c, l := range e.subs {
		l.close()
		delete(e.subs, c)
	}
	e.on = false
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
	if !e.on && time.Now().After(e.retry) {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := e.startLocked(sctx); err != nil {
			e.s.report(ctx, e.s.channel, pkg.Fail("subscribe", e.s.channel, nil, err))
		}
		cancel()
	}
	if e.on {
		w.maxPoll = waitPoll
	}
	e.mu.Unlock()
	e.wmu.Lock()
	defer e.wmu.Unlock()
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
	e.wmu.Lock()
	for _, k := range w.keys {
		delete(e.waiters[k], w)
		if len(e.waiters[k]) == 0 {
			delete(e.waiters, k)
		}
	}
	e.wmu.Unlock()
}
