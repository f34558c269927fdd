package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redis/redis_rate/v10"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/ratelimit"
)

// scalingGoroutines are the loads of BenchmarkScaling: one caller, a busy
// service, a very busy one.
var scalingGoroutines = []int{1, 16, 64}

// BenchmarkScaling shows how throughput grows with the number of callers,
// ours and the peer's side by side at exactly g goroutines (not g per
// CPU): a GCRA check against redis_rate, and an uncontended lock
// acquire+release against redislock. ns/op is wall time per operation of
// the whole group, so 1e9/ns is the operations per second.
func BenchmarkScaling(b *testing.B) {
	for _, g := range scalingGoroutines {
		suffix := "/g=" + strconv.Itoa(g)
		b.Run("ratelimit-gcra/redschema"+suffix, func(b *testing.B) {
			e, l := rlOurs(b, ratelimit.GCRA, rlRate)
			runGoroutines(b, e, g, func(ctx context.Context, _, i int) error {
				_, err := l.Allow(ctx, rlIDNames[i%rlIDs])
				return err
			})
		})
		b.Run("ratelimit-gcra/redis_rate"+suffix, func(b *testing.B) {
			e := benchutil.New(b)
			b.Cleanup(func() { _ = benchutil.Clean(context.Background(), e.Client, "rate:"+e.NS.Prefix) })
			l, lim := redis_rate.NewLimiter(e.Client), redis_rate.PerHour(rlRate)
			runGoroutines(b, e, g, func(ctx context.Context, _, i int) error {
				_, err := l.Allow(ctx, e.NS.Prefix+rlIDNames[i%rlIDs], lim)
				return err
			})
		})
		b.Run("lock/redschema"+suffix, func(b *testing.B) {
			e := benchutil.New(b)
			c, err := lock.New(e.Client, lock.WithNamespace(e.NS))
			if err != nil {
				b.Fatal(err)
			}
			runGoroutines(b, e, g, func(ctx context.Context, w, _ int) error {
				l, err := c.TryAcquire(ctx, "bench", strconv.Itoa(w), lockTTL)
				if err != nil {
					return err
				}
				return l.Release(ctx)
			})
		})
		b.Run("lock/redislock"+suffix, func(b *testing.B) {
			e := benchutil.New(b)
			c := redislock.New(e.Client)
			runGoroutines(b, e, g, func(ctx context.Context, w, _ int) error {
				l, err := c.Obtain(ctx, e.NS.Prefix+"redislock:"+strconv.Itoa(w), lockTTL, nil)
				if err != nil {
					return err
				}
				return l.Release(ctx)
			})
		})
	}
}

// runGoroutines runs b.N calls of op on exactly g goroutines; op gets its
// goroutine's number and a call counter.
func runGoroutines(b *testing.B, e *benchutil.Env, g int, op func(ctx context.Context, worker, i int) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	e.Warm(b)
	b.ReportAllocs()
	b.ResetTimer()
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > b.N {
					return
				}
				if err := op(ctx, w, i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	e.ReportTrips(b)
}
