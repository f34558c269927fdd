package harness

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Trips is a go-redis hook that counts round trips: commands sent on their
// own and pipelines (or transactions), apart. The connection handshake
// (HELLO, CLIENT, AUTH, SELECT, READONLY), which go-redis also sends
// through hooks whenever its pool opens a connection, is not counted.
type Trips struct{ single, pipelines atomic.Int64 }

var _ redis.Hook = (*Trips)(nil)

// CountTrips installs a Trips hook on c. Install it on a client of the
// test's own (FreshClient): hooks cannot be removed.
func CountTrips(c redis.UniversalClient) *Trips {
	t := &Trips{}
	c.AddHook(t)
	return t
}

// Single returns the commands sent on their own so far.
func (t *Trips) Single() int64 { return t.single.Load() }

// Pipelines returns the pipelines sent so far.
func (t *Trips) Pipelines() int64 { return t.pipelines.Load() }

// Total returns every round trip so far.
func (t *Trips) Total() int64 { return t.Single() + t.Pipelines() }

// Reset sets both counts to zero.
func (t *Trips) Reset() { t.single.Store(0); t.pipelines.Store(0) }

func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select", "readonly":
		return true
	}
	return false
}

// DialHook implements redis.Hook.
func (t *Trips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (t *Trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			t.single.Add(1)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (t *Trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if !handshake(cmd) {
				t.pipelines.Add(1)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// AllAtOnce runs f(0), ..., f(n-1), each on a goroutine of its own,
// released together, and returns when all have returned.
func AllAtOnce(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}

// CheckShared fails t unless the calls t counted, made at once, went out
// in shared pipelines and fewer round trips than calls (lanes > 0), or
// one round trip each, none in a pipeline (lanes 0: auto-pipelining off).
func (t *Trips) CheckShared(tb testing.TB, lanes, calls int) {
	tb.Helper()
	tb.Logf("%d calls in %d round trips (%d pipelines)", calls, t.Total(), t.Pipelines())
	switch {
	case lanes == 0 && t.Pipelines() != 0:
		tb.Errorf("%d shared pipelines with auto-pipelining off", t.Pipelines())
	case lanes > 0 && t.Pipelines() == 0:
		tb.Errorf("no shared pipeline for %d calls made at once", calls)
	case lanes > 0 && t.Total() >= int64(calls):
		tb.Errorf("%d round trips for %d calls made at once: want fewer", t.Total(), calls)
	}
}
