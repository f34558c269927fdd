package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/redschema/redschema/internal/sub"
)

// maxDenyEntries bounds the deny cache: a refusal found with the cache full
// (after dropping what has expired) is not cached.
const maxDenyEntries = 1 << 16

// denial is a cached refusal: requests of at least cost are refused until
// until (local monotonic clock).
type denial struct {
	cost  int
	sent  time.Time
	until time.Time
	res   Result
}

// denyCache is WithDenyCache's state: refusals by identifier, kept only
// while the subscription to the events channel is live, so that a Reset,
// Block or Refund from any instance drops them at once.
type denyCache struct {
	l *Limiter

	mu      sync.Mutex
	m       map[string]denial
	epoch   uint64 // counts forgets and subscriptions: see store
	live    bool   // subscribed: entries may be added
	opening bool
	retry   time.Time // no new attempt to subscribe before
	sub     *sub.Subscription[string]
	cancel  context.CancelFunc
	done    chan struct{}
	closed  bool
}

// lookup returns the cached refusal of a request of cost for id, if any.
func (c *denyCache) lookup(id string, cost int) (Result, bool) {
	c.mu.Lock()
	d, ok := c.m[id]
	c.mu.Unlock()
	if !ok || cost < d.cost {
		return Result{}, false
	}
	left := time.Until(d.until)
	if left <= 0 {
		return Result{}, false
	}
	res := d.res
	gone := time.Since(d.sent)
	if res.RetryAfter == Never {
		// no wait admits this cost: only the reset moves on
		res.ResetAfter = max(0, res.ResetAfter-gone)
	} else {
		res.RetryAfter = max(left, res.RetryAfter-gone)
		res.ResetAfter = max(res.RetryAfter, res.ResetAfter-gone)
	}
	res.Local = true
	return res, true
}

// begin returns the time and epoch before a check is sent, for store.
func (c *denyCache) begin() (time.Time, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now(), c.epoch
}

// store caches a refusal of cost for id, decided by a script sent at sent:
// Redis computed RetryAfter no earlier than sent, so sent + RetryAfter is
// never later than the time Redis would admit the request (if nothing else
// happens), and the cache never refuses past it. The refusal is not cached
// when anything was forgotten since the check was sent (epoch moved): a
// Reset announced meanwhile may postdate the refusal, and its message is
// already handled; nor before the subscription is live (a Reset announced
// before it would be missed).
func (c *denyCache) store(id string, cost int, sent time.Time, epoch uint64, res Result) {
	hold := min(res.RetryAfter, c.l.opt.denyHold)
	if hold <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live {
		c.openLocked()
		return
	}
	if epoch != c.epoch {
		return
	}
	if len(c.m) >= maxDenyEntries {
		now := time.Now()
		for k, d := range c.m {
			if !now.Before(d.until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxDenyEntries {
			return
		}
	}
	if old, ok := c.m[id]; ok && old.cost < cost && old.until.After(sent.Add(hold)) {
		return // the entry covers more
	}
	c.m[id] = denial{cost: cost, sent: sent, until: sent.Add(hold), res: res}
}

// forget drops id (a Reset, Block or Refund, here or announced).
func (c *denyCache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.epoch++
	c.mu.Unlock()
}

// openLocked starts subscribing in the background, unless it is under way,
// done, or failed less than a second ago.
func (c *denyCache) openLocked() {
	if c.opening || c.live || c.closed || time.Now().Before(c.retry) {
		return
	}
	c.opening = true
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sb, err := sub.Open(ctx, c.l.run.Client(), []string{c.l.channel}, func(p string) (string, error) { return p, nil }, 1024)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.opening = false
		if err != nil || c.closed {
			c.retry = time.Now().Add(time.Second)
			if sb != nil {
				_ = sb.Close()
			}
			return
		}
		pctx, pcancel := context.WithCancel(context.Background())
		c.sub, c.cancel, c.done, c.live = sb, pcancel, make(chan struct{}), true
		c.epoch++
		go c.pump(pctx, sb, c.done)
	}()
}

// pump drops the identifiers announced on the events channel. When the
// subscription ends, the cache is emptied and stops caching.
func (c *denyCache) pump(ctx context.Context, sb *sub.Subscription[string], done chan struct{}) {
	defer close(done)
	defer func() {
		c.mu.Lock()
		c.live = false
		clear(c.m)
		c.mu.Unlock()
	}()
	for {
		m, err := sb.Next(ctx)
		if err != nil {
			return
		}
		c.forget(m.Raw)
	}
}

// close ends the subscription and empties the cache.
func (c *denyCache) close() {
	c.mu.Lock()
	c.closed = true
	sb, cancel, done := c.sub, c.cancel, c.done
	c.sub, c.live = nil, false
	clear(c.m)
	c.mu.Unlock()
	if sb != nil {
		cancel()
		_ = sb.Close()
		<-done
	}
}

// forget drops id from the local deny cache, if there is one.
func (l *Limiter) forget(id string) {
	if l.deny != nil {
		l.deny.forget(id)
	}
}

// Close releases what the limiter holds in the background: the deny
// cache's subscription (WithDenyCache) and degraded mode's heartbeat
// (WithDegradedMode). Checks made after Close still work, without them.
// Close is safe to call more than once.
func (l *Limiter) Close() error {
	if l.deny != nil {
		l.deny.close()
	}
	if l.degr != nil {
		l.degr.close()
	}
	return nil
}
