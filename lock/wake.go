package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// waker is a waiting Acquire's subscription to its resource's release
// channel (WithWakeups). A nil *waker sleeps out the backoff.
type waker struct {
	ch    string
	tried bool
	ps    *redis.PubSub
	msgs  <-chan *redis.Message
}

// subTimeout bounds the subscription's confirmation.
const subTimeout = time.Second

// subscribe subscribes on the first call and reports whether it did; a
// failed subscription (a server without sharded pub/sub, an outage)
// leaves the waiter polling.
func (w *waker) subscribe(ctx context.Context, c *Client) bool {
	if w.tried {
		return false
	}
	w.tried = true
	sctx, cancel := context.WithTimeout(ctx, subTimeout)
	defer cancel()
	ps := c.run.Client().SSubscribe(sctx, w.ch)
	if _, err := ps.Receive(sctx); err != nil {
		_ = ps.Close()
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
	if w.ps != nil {
		_ = w.ps.Close()
	}
}
