package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// waker is a waiting call's subscription to a resource's release channel
// (WithWakeups). A nil *waker sleeps out the backoff.
type waker struct {
	ch     string
	failed bool // a subscription failed: poll from then on
	ps     *redis.PubSub
	msgs   <-chan *redis.Message
}

// releasedChannel is the sharded channel a release of (resourceType,
// resourceID) announces itself on: the same for every kind of lease of
// the resource (lock, multi-lock, read-write lock, semaphore), on the
// resource's slot.
func (c *Client) releasedChannel(op, typ, id string) (string, error) {
	return pkg.Key(op, releasedChannel, c.opt.ns, typ, id)
}

// follow moves the subscription to ch (a multi-lock waits for whichever
// resource it last found held) and reports whether it subscribed just now,
// as subscribe does.
func (w *waker) follow(ctx context.Context, c *Client, ch string) bool {
	if w == nil {
		return false
	}
	if ch != w.ch {
		w.close()
		w.ch, w.ps, w.msgs = ch, nil, nil
	}
	return w.subscribe(ctx, c)
}

// subTimeout bounds the subscription's confirmation.
const subTimeout = time.Second

// subscribe subscribes to w.ch unless it is subscribed already and
// reports whether it did; a failed subscription (a server without sharded
// pub/sub, an outage) leaves the waiter polling for the rest of its wait.
func (w *waker) subscribe(ctx context.Context, c *Client) bool {
	if w == nil || w.failed || w.ps != nil {
		return false
	}
	sctx, cancel := context.WithTimeout(ctx, subTimeout)
	defer cancel()
	ps := c.run.Client().SSubscribe(sctx, w.ch)
	if _, err := ps.Receive(sctx); err != nil {
		_ = ps.Close()
		w.failed = true
		return false
	}
	w.ps, w.msgs = ps, ps.Channel(redis.WithChannelSize(1))
	return true
}

// sleep waits d, or less when a release is announced, or until ctx ends.
func (w *waker) sleep(ctx context.Context, d time.Duration) error {
	if w == nil || w.msgs == nil {
		return sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-w.msgs:
	}
	return nil
}

func (w *waker) close() {
	if w != nil && w.ps != nil {
		_ = w.ps.Close()
	}
}
