package bench

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/ratelimit"
)

// Every side runs at the same concurrency, over the same number of
// identifiers, with a limit high enough that requests are admitted (the
// common case).
const (
	rlParallel = 8 // goroutines per GOMAXPROCS
	rlIDs      = 1000
	rlRate     = 100_000 // per hour
)

var rlIDNames = func() []string {
	out := make([]string, rlIDs)
	for i := range out {
		out[i] = "client-" + strconv.Itoa(i)
	}
	return out
}()

// rlRun runs allow in parallel over the identifiers and reports trips/op.
func rlRun(b *testing.B, e *benchutil.Env, allow func(ctx context.Context, id string) error) {
	ctx := context.Background()
	var next atomic.Int64
	e.Warm(b)
	b.ReportAllocs()
	b.SetParallelism(rlParallel)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := allow(ctx, rlIDNames[next.Add(1)%rlIDs]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	e.ReportTrips(b)
}

func rlOurs(b *testing.B, a ratelimit.Algorithm, rate int) (*benchutil.Env, *ratelimit.Limiter) {
	e := benchutil.New(b)
	l, err := ratelimit.New(e.Client, ratelimit.Policy{{Algorithm: a, Limit: ratelimit.PerHour(rate)}}, ratelimit.WithNamespace(e.NS))
	if err != nil {
		b.Fatal(err)
	}
	return e, l
}

// rlPolicy is seed 001's shape: a GCRA rule with a burst, hourly and daily
// fixed windows, and the runtime config hash read on every call.
func rlPolicy(b *testing.B, gcra ratelimit.Limit) (*benchutil.Env, *ratelimit.Limiter) {
	e := benchutil.New(b)
	l, err := ratelimit.New(e.Client, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: gcra},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(rlRate * 10)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(rlRate * 100)},
	}, ratelimit.WithNamespace(e.NS), ratelimit.WithRuntimeConfig())
	if err != nil {
		b.Fatal(err)
	}
	return e, l
}

func rlRedisRate(b *testing.B, rate int) (*benchutil.Env, rlSide) {
	e := benchutil.New(b)
	b.Cleanup(func() { _ = benchutil.Clean(context.Background(), e.Client, "rate:"+e.NS.Prefix) })
	l := redis_rate.NewLimiter(e.Client)
	lim := redis_rate.PerHour(rate)
	return e, func(ctx context.Context, id string) error {
		_, err := l.Allow(ctx, e.NS.Prefix+id, lim)
		return err
	}
}

func rlUlule(b *testing.B, rate int) (*benchutil.Env, rlSide) {
	e := benchutil.New(b)
	store, err := sredis.NewStoreWithOptions(e.Client, limiter.StoreOptions{Prefix: e.NS.Prefix + "ulule"})
	if err != nil {
		b.Fatal(err)
	}
	l := limiter.New(store, limiter.Rate{Period: time.Hour, Limit: int64(rate)})
	return e, func(ctx context.Context, id string) error {
		_, err := l.Get(ctx, id)
		return err
	}
}

// BenchmarkRatelimitAllow compares Allow of every algorithm with the
// peers: redis_rate (GCRA) and ulule/limiter (fixed window).
func BenchmarkRatelimitAllow(b *testing.B) {
	for _, a := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.Sliding, ratelimit.SlidingCounter, ratelimit.GCRA} {
		b.Run("redschema-"+a.String(), func(b *testing.B) {
			e, l := rlOurs(b, a, rlRate)
			rlRun(b, e, func(ctx context.Context, id string) error { _, err := l.Allow(ctx, id); return err })
		})
	}
	b.Run("redschema-policy3", func(b *testing.B) {
		e, l := rlPolicy(b, ratelimit.Limit{Rate: rlRate, Period: time.Minute, Burst: 1000})
		rlRun(b, e, func(ctx context.Context, id string) error { _, err := l.Allow(ctx, id); return err })
	})
	b.Run("redis_rate-gcra", func(b *testing.B) {
		e, f := rlRedisRate(b, rlRate)
		rlRun(b, e, f)
	})
	b.Run("ulule-fixed", func(b *testing.B) {
		e, f := rlUlule(b, rlRate)
		rlRun(b, e, f)
	})
}

// BenchmarkRatelimitMemory reports Redis memory per tracked identifier
// (bytes/id, keys/id) after 10 admitted requests each, for every algorithm
// and the peers. The timed loop only re-reads MEMORY USAGE of one key.
func BenchmarkRatelimitMemory(b *testing.B) {
	// 1000/hour: GCRA state then lives 36 s, long enough to be measured.
	const ids, reqs, memRate = 200, 10, 1000
	measure := func(b *testing.B, e *benchutil.Env, prefix string, allow func(ctx context.Context, id string) error) {
		ctx := context.Background()
		for _, id := range rlIDNames[:ids] {
			for j := 0; j < reqs; j++ {
				if err := allow(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		}
		bytes, n, err := benchutil.MemoryUnder(ctx, e.Client, prefix)
		if err != nil {
			b.Fatal(err)
		}
		one := e.Client.Scan(ctx, 0, keys.GlobEscape(prefix)+"*", 10).Iterator()
		if !one.Next(ctx) {
			b.Fatal("no key written")
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := e.Client.MemoryUsage(ctx, one.Val(), 0).Err(); err != nil && !errors.Is(err, redis.Nil) {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(bytes)/ids, "bytes/id")
		b.ReportMetric(float64(n)/ids, "keys/id")
	}
	for _, a := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.Sliding, ratelimit.SlidingCounter, ratelimit.GCRA} {
		b.Run("redschema-"+a.String(), func(b *testing.B) {
			e, l := rlOurs(b, a, memRate)
			measure(b, e, e.NS.Prefix, func(ctx context.Context, id string) error { _, err := l.Allow(ctx, id); return err })
		})
	}
	b.Run("redschema-policy3", func(b *testing.B) {
		e, l := rlPolicy(b, ratelimit.Limit{Rate: memRate, Period: time.Hour, Burst: 100})
		measure(b, e, e.NS.Prefix, func(ctx context.Context, id string) error { _, err := l.Allow(ctx, id); return err })
	})
	b.Run("redis_rate-gcra", func(b *testing.B) {
		e, f := rlRedisRate(b, memRate)
		measure(b, e, "rate:"+e.NS.Prefix, f)
	})
	b.Run("ulule-fixed", func(b *testing.B) {
		e, f := rlUlule(b, memRate)
		measure(b, e, e.NS.Prefix, f)
	})
}

type rlSide func(ctx context.Context, id string) error
