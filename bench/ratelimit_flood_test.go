package bench

import (
	"context"
	"testing"
	"time"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/ratelimit"
)

// BenchmarkRatelimitFlood is one identifier flooding a limiter that
// refuses it (10 per second, burst 10: almost every request is refused),
// from rlParallel goroutines per GOMAXPROCS, without and with the deny
// cache (WithDenyCache). trips/op and redis-us/op are the Redis load per
// request: without the cache every refused request is a script on Redis;
// with it, about one check per RetryAfter (100 ms) reaches Redis, the rest
// are refused in process.
func BenchmarkRatelimitFlood(b *testing.B) {
	for _, s := range []struct {
		name string
		opts []ratelimit.Option
	}{
		{"redschema", nil},
		{"redschema-denycache", []ratelimit.Option{ratelimit.WithDenyCache(time.Minute)}},
	} {
		b.Run(s.name, func(b *testing.B) {
			e := benchutil.New(b)
			l, err := ratelimit.New(e.Client, ratelimit.Policy{
				{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 10}},
			}, append(s.opts, ratelimit.WithNamespace(e.NS))...)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			// the first refusal opens the cache's subscription
			for i := 0; i < 50; i++ {
				if _, err := l.Allow(ctx, "flooder"); err != nil {
					b.Fatal(err)
				}
			}
			time.Sleep(50 * time.Millisecond)
			e.Warm(b)
			b.ReportAllocs()
			b.SetParallelism(rlParallel)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Allow(ctx, "flooder"); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			e.ReportTrips(b)
		})
	}
}
