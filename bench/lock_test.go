package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/lock"
)

// lockParallelism is the goroutines per CPU for every side of the lock
// benchmarks, so that all of them run at the same concurrency.
const lockParallelism = 8

const lockTTL = 10 * time.Second

// BenchmarkLock measures an uncontended acquire+release pair (each
// goroutine locks its own resource) for redschema's lock (auto-pipelined,
// its default, and with WithPipelining(0)), bsm/redislock and
// go-redsync/redsync (one pool). trips/op counts both calls: 2 means one
// round trip each; auto-pipelined calls share round trips, so below 2.
func BenchmarkLock(b *testing.B) {
	ours := func(opts ...lock.Option) func(b *testing.B) {
		return func(b *testing.B) {
			e := benchutil.New(b)
			c, err := lock.New(e.Client, append([]lock.Option{lock.WithNamespace(e.NS)}, opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			var ids atomic.Int64
			e.Warm(b)
			b.SetParallelism(lockParallelism)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				id := strconv.FormatInt(ids.Add(1), 10)
				for pb.Next() {
					l, err := c.TryAcquire(ctx, "bench", id, lockTTL)
					if err != nil {
						b.Error(err)
						return
					}
					if err := l.Release(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			e.ReportTrips(b)
		}
	}
	b.Run("redschema", ours())
	b.Run("redislock", func(b *testing.B) {
		e := benchutil.New(b)
		c := redislock.New(e.Client)
		var ids atomic.Int64
		e.Warm(b)
		b.SetParallelism(lockParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			key := e.NS.Prefix + "redislock:" + strconv.FormatInt(ids.Add(1), 10)
			for pb.Next() {
				l, err := c.Obtain(ctx, key, lockTTL, nil)
				if err != nil {
					b.Error(err)
					return
				}
				if err := l.Release(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
		e.ReportTrips(b)
	})
	b.Run("redsync", func(b *testing.B) {
		e := benchutil.New(b)
		rs := redsync.New(goredis.NewPool(e.Client))
		var ids atomic.Int64
		e.Warm(b)
		b.SetParallelism(lockParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			name := e.NS.Prefix + "redsync:" + strconv.FormatInt(ids.Add(1), 10)
			for pb.Next() {
				m := rs.NewMutex(name, redsync.WithExpiry(lockTTL), redsync.WithTries(1))
				if err := m.LockContext(ctx); err != nil {
					b.Error(err)
					return
				}
				if ok, err := m.UnlockContext(ctx); !ok || err != nil {
					b.Error(ok, err)
					return
				}
			}
		})
		e.ReportTrips(b)
	})
	b.Run("redschema-unpipelined", ours(lock.WithPipelining(0)))
}

// BenchmarkLockContended measures a failed TryAcquire on a held lock: one
// round trip for redschema and redislock; redsync follows every failed
// SET NX with an unlock script (it cannot tell a partial quorum from none),
// so it takes two.
func BenchmarkLockContended(b *testing.B) {
	b.Run("redschema", func(b *testing.B) {
		e := benchutil.New(b)
		c, _ := lock.New(e.Client, lock.WithNamespace(e.NS))
		held, err := c.TryAcquire(context.Background(), "bench", "hot", lockTTL)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = held.Release(context.Background()) }()
		e.Warm(b)
		b.SetParallelism(lockParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if _, err := c.TryAcquire(ctx, "bench", "hot", lockTTL); err == nil {
					b.Error("obtained a held lock")
					return
				}
			}
		})
		e.ReportTrips(b)
	})
	b.Run("redislock", func(b *testing.B) {
		e := benchutil.New(b)
		c := redislock.New(e.Client)
		key := e.NS.Prefix + "redislock:hot"
		held, err := c.Obtain(context.Background(), key, lockTTL, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = held.Release(context.Background()) }()
		e.Warm(b)
		b.SetParallelism(lockParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if _, err := c.Obtain(ctx, key, lockTTL, nil); err == nil {
					b.Error("obtained a held lock")
					return
				}
			}
		})
		e.ReportTrips(b)
	})
	b.Run("redsync", func(b *testing.B) {
		e := benchutil.New(b)
		rs := redsync.New(goredis.NewPool(e.Client))
		name := e.NS.Prefix + "redsync:hot"
		held := rs.NewMutex(name, redsync.WithExpiry(lockTTL), redsync.WithTries(1))
		if err := held.Lock(); err != nil {
			b.Fatal(err)
		}
		defer func() { _, _ = held.Unlock() }()
		e.Warm(b)
		b.SetParallelism(lockParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				m := rs.NewMutex(name, redsync.WithExpiry(lockTTL), redsync.WithTries(1))
				if err := m.LockContext(ctx); err == nil {
					b.Error("obtained a held lock")
					return
				}
			}
		})
		e.ReportTrips(b)
	})
}

// BenchmarkLockMemory reports the Redis memory of 1,000 held locks per
// library, per lock (redschema's includes the fence key). The timed loop
// is empty: the metric is the point.
func BenchmarkLockMemory(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	measure := func(b *testing.B, e *benchutil.Env, take func(i int) error) {
		for i := range n {
			if err := take(i); err != nil {
				b.Fatal(err)
			}
		}
		bytes, keys, err := benchutil.MemoryUnder(ctx, e.Client, e.NS.Prefix)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
		}
		b.ReportMetric(float64(bytes)/n, "B/lock")
		b.ReportMetric(float64(keys)/n, "keys/lock")
	}
	b.Run("redschema", func(b *testing.B) {
		e := benchutil.New(b)
		c, _ := lock.New(e.Client, lock.WithNamespace(e.NS), lock.WithOwner("host-1"))
		measure(b, e, func(i int) error {
			_, err := c.TryAcquire(ctx, lock.File, fmt.Sprintf("file-%06d", i), lockTTL)
			return err
		})
	})
	b.Run("redislock", func(b *testing.B) {
		e := benchutil.New(b)
		c := redislock.New(e.Client)
		measure(b, e, func(i int) error {
			_, err := c.Obtain(ctx, fmt.Sprintf("%slock:file:file-%06d", e.NS.Prefix, i), lockTTL, nil)
			return err
		})
	})
	b.Run("redsync", func(b *testing.B) {
		e := benchutil.New(b)
		rs := redsync.New(goredis.NewPool(e.Client))
		measure(b, e, func(i int) error {
			return rs.NewMutex(fmt.Sprintf("%slock:file:file-%06d", e.NS.Prefix, i), redsync.WithExpiry(lockTTL), redsync.WithTries(1)).Lock()
		})
	})
}

// BenchmarkLockHandoff measures the hand-off latency of a contended lock:
// the time from the holder's Release to the return of the Acquire that
// was waiting for it (ns/op is that latency; the set-up of each hand-off
// is not timed). "polling" waits with the default backoff
// (ExponentialBackoff(8ms, 256ms)), "wakeups" with WithWakeups: the
// release's SPUBLISH wakes the waiter, the same backoff as a fallback.
func BenchmarkLockHandoff(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []lock.Option
	}{{"polling", nil}, {"wakeups", []lock.Option{lock.WithWakeups()}}} {
		b.Run(v.name, func(b *testing.B) {
			e := benchutil.New(b)
			c, err := lock.New(e.Client, append([]lock.Option{lock.WithNamespace(e.NS)}, v.opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			e.Warm(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				held, err := c.TryAcquire(ctx, "bench", "handoff", lockTTL)
				if err != nil {
					b.Fatal(err)
				}
				got := make(chan error, 1)
				go func() {
					l, err := c.Acquire(ctx, "bench", "handoff", lockTTL)
					if err == nil {
						b.StopTimer()
						err = l.Release(ctx)
					}
					got <- err
				}()
				// Let the waiter find the lock held and settle into its
				// wait (and subscribe, with wakeups).
				time.Sleep(30 * time.Millisecond)
				b.StartTimer()
				if err := held.Release(ctx); err != nil {
					b.Fatal(err)
				}
				if err := <-got; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
