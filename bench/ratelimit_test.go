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

func rlOurs(b *testing.B, a ratelimit.Algorithm, rate int, opts ...ratelimit.Option) (*benchutil.Env, *ratelimit.Limiter) {
	e := benchutil.New(b)
	l, err := ratelimit.New(e.Client, ratelimit.Policy{{Algorithm: a, Limit: ratelimit.PerHour(rate)}}, append(opts, ratelimit.WithNamespace(e.NS))...)
	if err != nil {
		b.Fatal(err)
	}
	return e, l
}

// rlPolicy is seed 001's shape: a GCRA rule with a burst, hourly and daily
// fixed windows, and the runtime config hash read on every call.
func rlPolicy(b *testing.B, gcra ratelimit.Limit, opts ...ratelimit.Option) (*benchutil.Env, *ratelimit.Limiter) {
	e := benchutil.New(b)
	l, err := ratelimit.New(e.Client, ratelimit.Policy{
		{Algorithm: ratelimit.GCRA, Limit: gcra},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerHour(rlRate * 10)},
		{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerDay(rlRate * 100)},
	}, append(opts, ratelimit.WithNamespace(e.NS), ratelimit.WithRuntimeConfig())...)
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
// peers: redis_rate (GCRA) and ulule/limiter (fixed window). Each
// algorithm is a pair of sub-benchmarks, ours and the peer's, run back to
// back (go test runs each sub-benchmark -count times, then the next) so
// that both see about the same load on this shared machine. policy3 is compared with redis_rate's one
// limit and with "peers3", the same three limits done the peers' way: one
// redis_rate and two ulule calls, three round trips and not atomic.
func BenchmarkRatelimitAllow(b *testing.B) {
	ours := func(l *ratelimit.Limiter) rlSide {
		return func(ctx context.Context, id string) error { _, err := l.Allow(ctx, id); return err }
	}
	type side struct {
		name string
		mk   func(b *testing.B) (*benchutil.Env, rlSide)
	}
	single := func(a ratelimit.Algorithm) side {
		return side{"redschema", func(b *testing.B) (*benchutil.Env, rlSide) {
			e, l := rlOurs(b, a, rlRate)
			return e, ours(l)
		}}
	}
	// The peers have no Block: "noblock" is ours with the same features
	// (WithoutBlocks), one Redis command fewer per check.
	noBlock := func(a ratelimit.Algorithm) side {
		return side{"redschema-noblock", func(b *testing.B) (*benchutil.Env, rlSide) {
			e, l := rlOurs(b, a, rlRate, ratelimit.WithoutBlocks())
			return e, ours(l)
		}}
	}
	// "unpipelined" is ours with auto-pipelining off: one round trip per
	// check, as the peers send them.
	unpiped := func(a ratelimit.Algorithm) side {
		return side{"redschema-unpipelined", func(b *testing.B) (*benchutil.Env, rlSide) {
			e, l := rlOurs(b, a, rlRate, ratelimit.WithPipelining(0))
			return e, ours(l)
		}}
	}
	gcraPeer := side{"redis_rate", func(b *testing.B) (*benchutil.Env, rlSide) { return rlRedisRate(b, rlRate) }}
	pairs := []struct {
		name  string
		sides []side
	}{
		{"fixed", []side{single(ratelimit.FixedWindow), {"ulule", func(b *testing.B) (*benchutil.Env, rlSide) { return rlUlule(b, rlRate) }},
			unpiped(ratelimit.FixedWindow), noBlock(ratelimit.FixedWindow)}},
		{"gcra", []side{single(ratelimit.GCRA), gcraPeer, unpiped(ratelimit.GCRA)}},
		{"swc", []side{single(ratelimit.SlidingCounter), gcraPeer, unpiped(ratelimit.SlidingCounter)}},
		{"sliding", []side{single(ratelimit.Sliding), gcraPeer, unpiped(ratelimit.Sliding), noBlock(ratelimit.Sliding)}},
		{"policy3", []side{
			{"redschema", func(b *testing.B) (*benchutil.Env, rlSide) {
				e, l := rlPolicy(b, ratelimit.Limit{Rate: rlRate, Period: time.Minute, Burst: 1000})
				return e, ours(l)
			}},
			gcraPeer,
			{"peers3", rlPeers3},
			{"redschema-unpipelined", func(b *testing.B) (*benchutil.Env, rlSide) {
				e, l := rlPolicy(b, ratelimit.Limit{Rate: rlRate, Period: time.Minute, Burst: 1000}, ratelimit.WithPipelining(0))
				return e, ours(l)
			}},
		}},
	}
	for _, p := range pairs {
		for _, s := range p.sides {
			b.Run(p.name+"/"+s.name, func(b *testing.B) {
				e, f := s.mk(b)
				rlRun(b, e, f)
			})
		}
	}
}

// BenchmarkRatelimitAllowSerial is one goroutine checking in a loop: the
// latency of one check when nothing else is in flight, where
// auto-pipelining must cost nothing (a lone check is sent at once, alone).
func BenchmarkRatelimitAllowSerial(b *testing.B) {
	sides := []struct {
		name string
		mk   func(b *testing.B) (*benchutil.Env, rlSide)
	}{
		{"fixed/redschema", func(b *testing.B) (*benchutil.Env, rlSide) {
			e, l := rlOurs(b, ratelimit.FixedWindow, rlRate)
			return e, func(ctx context.Context, id string) error { _, err := l.Allow(ctx, id); return err }
		}},
		{"fixed/redschema-unpipelined", func(b *testing.B) (*benchutil.Env, rlSide) {
			e, l := rlOurs(b, ratelimit.FixedWindow, rlRate, ratelimit.WithPipelining(0))
			return e, func(ctx context.Context, id string) error { _, err := l.Allow(ctx, id); return err }
		}},
		{"fixed/ulule", func(b *testing.B) (*benchutil.Env, rlSide) { return rlUlule(b, rlRate) }},
		{"gcra/redschema", func(b *testing.B) (*benchutil.Env, rlSide) {
			e, l := rlOurs(b, ratelimit.GCRA, rlRate)
			return e, func(ctx context.Context, id string) error { _, err := l.Allow(ctx, id); return err }
		}},
		{"gcra/redis_rate", func(b *testing.B) (*benchutil.Env, rlSide) { return rlRedisRate(b, rlRate) }},
	}
	for _, s := range sides {
		b.Run(s.name, func(b *testing.B) {
			e, f := s.mk(b)
			ctx := context.Background()
			e.Warm(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := f(ctx, rlIDNames[i%rlIDs]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			e.ReportTrips(b)
		})
	}
}

// rlPeers3 is policy3's three limits with the peers: redis_rate for the
// GCRA rule, ulule for the hourly and daily windows; three round trips.
func rlPeers3(b *testing.B) (*benchutil.Env, rlSide) {
	e := benchutil.New(b)
	b.Cleanup(func() { _ = benchutil.Clean(context.Background(), e.Client, "rate:"+e.NS.Prefix) })
	rr := redis_rate.NewLimiter(e.Client)
	gcra := redis_rate.Limit{Rate: rlRate, Period: time.Minute, Burst: 1000}
	var ul [2]*limiter.Limiter
	for i, r := range []limiter.Rate{{Period: time.Hour, Limit: rlRate * 10}, {Period: 24 * time.Hour, Limit: rlRate * 100}} {
		store, err := sredis.NewStoreWithOptions(e.Client, limiter.StoreOptions{Prefix: e.NS.Prefix + "ulule" + strconv.Itoa(i)})
		if err != nil {
			b.Fatal(err)
		}
		ul[i] = limiter.New(store, r)
	}
	return e, func(ctx context.Context, id string) error {
		if _, err := rr.Allow(ctx, e.NS.Prefix+id, gcra); err != nil {
			return err
		}
		for _, l := range ul {
			if _, err := l.Get(ctx, id); err != nil {
				return err
			}
		}
		return nil
	}
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
		one := e.Client.Scan(ctx, 0, keys.Namespace{Prefix: prefix}.Match(), 10).Iterator()
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
