package call

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// While a cluster moves a slot, a script whose keys are not all on one
// side gets ASK, then TRYAGAIN from the importing node; a failing-over
// shard answers CLUSTERDOWN or MASTERDOWN; a promoted replica's old
// master answers READONLY; a restarting node LOADING. go-redis retries
// these for about a hundred milliseconds (MaxRedirects) and then gives up.
// Every operation of the library is safe to send again (the reliability
// rules make writes idempotent, or, for the rate limiters' counters, only
// stricter), so the Runner keeps retrying them, with backoff, until the
// call's context ends: a call fails during a migration or a failover only
// by its own deadline. Without a deadline it gives up after
// MaxRedirectWait.

// MaxRedirectWait bounds the retries of a call whose context has no
// deadline.
const MaxRedirectWait = 10 * time.Second

// redirectPrefixes are the server errors that mean "this slot is moving
// or its shard is failing over: ask again".
var redirectPrefixes = []string{"TRYAGAIN", "ASK ", "MOVED ", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "LOADING"}

// redirected reports whether err is one of them (as go-redis returns it,
// or as a script error quoting it).
func redirected(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	for _, p := range redirectPrefixes {
		if strings.HasPrefix(s, p) || strings.Contains(s, " "+p) {
			return true
		}
	}
	return false
}

// retrier paces the retries of one call.
type retrier struct {
	attempt int
	until   time.Time
}

func newRetrier(ctx context.Context) *retrier {
	r := &retrier{}
	if d, ok := ctx.Deadline(); ok {
		r.until = d
	} else {
		r.until = time.Now().Add(MaxRedirectWait)
	}
	return r
}

// again waits before the next attempt (8 ms doubling to 256 ms, with
// jitter) and reports whether there should be one: false once the context
// is done or the wait would pass the deadline.
func (r *retrier) again(ctx context.Context) bool {
	d := 8 * time.Millisecond << min(r.attempt, 5)
	d = d/2 + rand.N(d/2+1)
	r.attempt++
	if time.Now().Add(d).After(r.until) {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// deadlineErr is why retries stopped: the context's error, or, when they
// stopped because the next wait would pass the deadline (or
// MaxRedirectWait), context.DeadlineExceeded.
func deadlineErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

// withCtx adds ctx's error to err when the context ended the call: with
// ContextTimeoutEnabled, go-redis reports a deadline that passed during a
// read as an i/o timeout, which errors.Is would not match with
// context.DeadlineExceeded.
func withCtx(ctx context.Context, err error) error {
	if err == nil {
		return err
	}
	cerr := ctx.Err()
	if cerr == nil {
		// The connection's deadline is the context's: its timeout can
		// fire a moment before the context reports it has ended.
		var ne net.Error
		d, ok := ctx.Deadline()
		if !ok || !errors.As(err, &ne) || !ne.Timeout() || time.Until(d) > deadlineSlack {
			return err
		}
		cerr = context.DeadlineExceeded
	}
	if errors.Is(err, cerr) {
		return err
	}
	return errors.Join(err, cerr)
}

// deadlineSlack is how close to its context's deadline a network timeout
// must come to count as that deadline.
const deadlineSlack = 5 * time.Millisecond

// reloadOnOutage asks a cluster client to reload its slot map when a call
// failed on the network (a timeout, a refused or broken connection): the
// node may be a master that died or froze, whose replica the cluster
// promotes within its node timeout. go-redis reloads by itself on MOVED,
// but not on a node that stopped answering, and otherwise only every
// ClusterStateReloadInterval (60 s by default): without this, calls go on
// timing out against the dead master for up to a minute after the
// promotion. The reload is lazy (in the background, at most one at a
// time), so this costs nothing on the healthy path.
func (r *Runner) reloadOnOutage(ctx context.Context, err error) {
	cc, ok := r.rdb.(*redis.ClusterClient)
	if !ok || err == nil || !outage(err) {
		return
	}
	cc.ReloadState(ctx)
}

// outage reports a network failure: a timeout (the caller's deadline
// included: with ContextTimeoutEnabled a hung node shows as one), or a
// connection that broke or could not be made.
func outage(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, net.ErrClosed)
}
