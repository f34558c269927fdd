package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gcache "github.com/go-redis/cache/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/cache"
	"github.com/redschema/redschema/keys"
)

// The cache benchmarks compare redschema's cache with go-redis/cache v9
// (eko/gocache, the second peer, is not served by the module
// proxy here). Both sides run at the same concurrency, over the same keys,
// with values of the same shape; go-redis/cache runs without its local
// TinyLFU tier (redschema's local tier is off by default too).
const (
	cacheParallel = 8
	cacheKeys     = 1000
	cacheTTL      = time.Hour
)

// cacheValue is a typical small API response (about 170 bytes of JSON).
type cacheValue struct {
	ID      int      `json:"id" msgpack:"id"`
	Name    string   `json:"name" msgpack:"name"`
	Owner   string   `json:"owner" msgpack:"owner"`
	Size    int64    `json:"size" msgpack:"size"`
	Tags    []string `json:"tags" msgpack:"tags"`
	Updated string   `json:"updated" msgpack:"updated"`
}

func newCacheValue(i int) cacheValue {
	return cacheValue{ID: i, Name: "report-" + strconv.Itoa(i) + ".pdf", Owner: "user-42", Size: 123456,
		Tags: []string{"finance", "q3"}, Updated: "2026-01-16T10:00:00Z"}
}

var cacheBenchKeys = func() []cache.Key {
	out := make([]cache.Key, cacheKeys)
	for i := range out {
		out[i] = cache.NewKey("/api/v1/files/"+strconv.Itoa(i), "GET", nil)
	}
	return out
}()

// cacheSide is one library under benchmark.
type cacheSide struct {
	name  string
	get   func(ctx context.Context, i int, load func() (cacheValue, error)) (cacheValue, error)
	set   func(ctx context.Context, i int, v cacheValue) error
	close func()
}

// cacheMiss is how a miss is made: a key no one used, by index.
var cacheMiss atomic.Int64

func cacheSides(b *testing.B, e *benchutil.Env) []cacheSide {
	ourSide := func(name string, opts ...cache.Option) cacheSide {
		opts = append([]cache.Option{cache.WithNamespace(e.NS), cache.WithPolicy(cache.Policy{Default: cacheTTL})}, opts...)
		ours, err := cache.New[cacheValue](e.Client, opts...)
		if err != nil {
			b.Fatal(err)
		}
		return cacheSide{
			name: name,
			get: func(ctx context.Context, i int, load func() (cacheValue, error)) (cacheValue, error) {
				return ours.Get(ctx, cacheKeyOf(i), func(context.Context) (cacheValue, error) { return load() })
			},
			set:   func(ctx context.Context, i int, v cacheValue) error { return ours.Set(ctx, cacheKeyOf(i), v) },
			close: func() { _ = ours.Close() },
		}
	}
	peer := gcache.New(&gcache.Options{Redis: e.Client})
	peerKey := func(i int) string { return e.NS.Prefix + "gocache:" + strconv.Itoa(i) }
	return []cacheSide{
		ourSide("redschema"),
		// Without auto-pipelining: each hit's four plain reads are a
		// round trip of their own, as go-redis/cache's GET is.
		ourSide("redschema-nopipe", cache.WithPipelining(0)),
		{
			name: "go-redis-cache",
			get: func(ctx context.Context, i int, load func() (cacheValue, error)) (cacheValue, error) {
				var v cacheValue
				err := peer.Once(&gcache.Item{Ctx: ctx, Key: peerKey(i), Value: &v, TTL: cacheTTL,
					Do: func(*gcache.Item) (any, error) { return load() }})
				return v, err
			},
			set: func(ctx context.Context, i int, v cacheValue) error {
				return peer.Set(&gcache.Item{Ctx: ctx, Key: peerKey(i), Value: v, TTL: cacheTTL})
			},
			close: func() {},
		},
	}
}

func cacheKeyOf(i int) cache.Key {
	if i < cacheKeys {
		return cacheBenchKeys[i]
	}
	return cache.NewKey("/api/v1/files/"+strconv.Itoa(i), "GET", nil)
}

// cacheRun runs op in parallel and reports trips/op and the Redis and
// client CPU per operation (see benchutil.Env.ReportTrips).
func cacheRun(b *testing.B, e *benchutil.Env, op func(ctx context.Context, n int64) error) {
	ctx := context.Background()
	var next atomic.Int64
	e.Warm(b)
	b.ReportAllocs()
	b.SetParallelism(cacheParallel)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(ctx, next.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	e.ReportTrips(b)
}

// cacheBench runs op on each side (ours and go-redis/cache, or the sides
// named), after prepare.
func cacheBench(b *testing.B, prepare func(ctx context.Context, side cacheSide) error, op func(ctx context.Context, side cacheSide, n int64) error, names ...string) {
	if len(names) == 0 {
		names = []string{"redschema", "go-redis-cache"}
	}
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			e := benchutil.New(b)
			side := pick(cacheSides(b, e), name)
			defer side.close()
			if prepare != nil {
				if err := prepare(context.Background(), side); err != nil {
					b.Fatal(err)
				}
			}
			cacheRun(b, e, func(ctx context.Context, n int64) error { return op(ctx, side, n) })
		})
	}
}

// BenchmarkCacheGetHit reads 1,000 cached entries (read-through Get:
// ours, with and without auto-pipelining, and go-redis/cache's Once).
func BenchmarkCacheGetHit(b *testing.B) {
	fill := func(ctx context.Context, side cacheSide) error {
		for i := 0; i < cacheKeys; i++ {
			if err := side.set(ctx, i, newCacheValue(i)); err != nil {
				return err
			}
		}
		return nil
	}
	cacheBench(b, fill, func(ctx context.Context, side cacheSide, n int64) error {
		_, err := side.get(ctx, int(n%cacheKeys), func() (cacheValue, error) { return cacheValue{}, fmt.Errorf("miss") })
		return err
	}, "redschema", "redschema-nopipe", "go-redis-cache")
}

// BenchmarkCacheMissLoad reads keys no one cached: each call loads (a
// loader that returns at once) and stores.
func BenchmarkCacheMissLoad(b *testing.B) {
	cacheBench(b, nil, func(ctx context.Context, side cacheSide, _ int64) error {
		i := int(cacheMiss.Add(1)) + cacheKeys
		_, err := side.get(ctx, i, func() (cacheValue, error) { return newCacheValue(i), nil })
		return err
	})
}

// BenchmarkCacheSet writes 1,000 entries over and over.
func BenchmarkCacheSet(b *testing.B) {
	cacheBench(b, nil, func(ctx context.Context, side cacheSide, n int64) error {
		i := int(n % cacheKeys)
		return side.set(ctx, i, newCacheValue(i))
	})
}

// BenchmarkCacheStampede: 4 instances (clients) × 25 goroutines miss one
// key at once, per iteration a new key; loads/op is the loader calls per
// stampede (the goal: 1 for ours, one per instance for a
// per-process Once).
func BenchmarkCacheStampede(b *testing.B) {
	const instances, goroutines = 4, 25
	for _, name := range []string{"redschema", "go-redis-cache"} {
		b.Run(name, func(b *testing.B) {
			e := benchutil.New(b)
			sides := make([]cacheSide, instances)
			for i := range sides {
				ie := &benchutil.Env{Client: e.NewClient(b), NS: e.NS}
				sides[i] = pick(cacheSides(b, ie), name)
				defer sides[i].close()
			}
			var loads atomic.Int64
			ctx := context.Background()
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				key := int(cacheMiss.Add(1)) + cacheKeys
				var wg sync.WaitGroup
				start := make(chan struct{})
				for _, s := range sides {
					for g := 0; g < goroutines; g++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							<-start
							_, err := s.get(ctx, key, func() (cacheValue, error) {
								loads.Add(1)
								time.Sleep(5 * time.Millisecond)
								return newCacheValue(key), nil
							})
							if err != nil {
								b.Error(err)
							}
						}()
					}
				}
				close(start)
				wg.Wait()
			}
			b.ReportMetric(float64(loads.Load())/float64(b.N), "loads/op")
		})
	}
}

// BenchmarkCacheMemory reports Redis bytes per cached entry (value,
// metadata, tag membership) for ours and for seed 001's layout written
// with plain commands (STRING value, HASH created_at/hits/size_bytes,
// SADD to cache:tag:files), and go-redis/cache's single key.
func BenchmarkCacheMemory(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	measure := func(b *testing.B, fill func(e *benchutil.Env) error) {
		e := benchutil.New(b)
		if err := fill(e); err != nil {
			b.Fatal(err)
		}
		bytes, _, err := benchutil.MemoryUnder(ctx, e.Client, e.NS.Prefix)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(bytes)/n, "B/entry")
	}
	b.Run("redschema", func(b *testing.B) {
		measure(b, func(e *benchutil.Env) error {
			c, err := cache.New[cacheValue](e.Client, cache.WithNamespace(e.NS), cache.WithoutHitCounts())
			if err != nil {
				return err
			}
			defer c.Close()
			for i := 0; i < n; i++ {
				if err := c.Set(ctx, cacheKeyOf(i), newCacheValue(i), cache.WithTags("files"), cache.WithTTL(cacheTTL)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("seed-layout", func(b *testing.B) {
		measure(b, func(e *benchutil.Env) error {
			ns := keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}
			tag := ns.Prefix + "cache:tag:files"
			for i := 0; i < n; i++ {
				k := cacheKeyOf(i)
				entry := ns.Prefix + "cache:api:" + k.Endpoint + ":GET:" + k.ParamsHash()
				v := fmt.Sprintf(`{"id":%d,"name":"report-%d.pdf","owner":"user-42","size":123456,"tags":["finance","q3"],"updated":"2026-01-16T10:00:00Z"}`, i, i)
				pipe := e.Client.Pipeline()
				pipe.Set(ctx, entry, v, cacheTTL)
				pipe.HSet(ctx, ns.Prefix+"cache:meta:"+entry, "created_at", "2026-01-16T10:00:00Z", "hits", 0, "size_bytes", len(v))
				pipe.Expire(ctx, ns.Prefix+"cache:meta:"+entry, cacheTTL)
				pipe.SAdd(ctx, tag, entry)
				if _, err := pipe.Exec(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("go-redis-cache", func(b *testing.B) {
		measure(b, func(e *benchutil.Env) error {
			peer := gcache.New(&gcache.Options{Redis: e.Client})
			for i := 0; i < n; i++ {
				if err := peer.Set(&gcache.Item{Ctx: ctx, Key: e.NS.Prefix + "gocache:" + strconv.Itoa(i), Value: newCacheValue(i), TTL: cacheTTL}); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

func pick(sides []cacheSide, name string) cacheSide {
	for _, s := range sides {
		if s.name == name {
			return s
		}
	}
	panic("no side " + name)
}
