package bench

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/dashboard"
	"github.com/redschema/redschema/keys"
)

// BenchmarkSchemaMatch prices classifying one scanned key against every
// package's patterns (keys.Registry.Match, what the dashboard's schema
// page and `redschema audit` do for each key a SCAN returns): a key that
// matches no pattern, the common case on a shared Redis, tries them all.
// No Redis is involved:
//
//	cd bench && go test -run '^$' -bench BenchmarkSchemaMatch .
func BenchmarkSchemaMatch(b *testing.B) {
	reg, err := keys.Compose(dashboard.Schemas()...)
	if err != nil {
		b.Fatal(err)
	}
	ns := keys.Namespace{Prefix: "app:"}
	for _, c := range []struct{ name, key string }{
		{"stray", "app:zentoria:jobs:" + strconv.Itoa(12345)},
		{"stray-deep", "app:a:b:c:d:e"},
		{"session", "app:session:user:{u1}:c2Vzc2lvbi1pZA"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				reg.Match(ns, c.key)
			}
		})
	}
}

// schemaScanKeys is how many keys BenchmarkSchemaScan writes: half built
// from the library's patterns, half strays.
const schemaScanKeys = 200_000

// BenchmarkSchemaScan prices what the dashboard's schema page and
// `redschema audit` do: keys.Registry.Audit of 200,000 keys under one
// prefix, half of them built by the library's patterns (each of its Redis
// type, with a one-hour TTL) and half strays under a few prefixes of their
// own. The keys are written once, before the timed scans, and removed
// after. Besides ns/op (wall time per scan) it reports cpu-s/scan, this
// process's CPU time (getrusage, user + system, the garbage collector
// included) per scan: the cost the issue bounds at 2 s. Standalone only
// (the fill pipelines keys of many slots):
//
//	cd bench && REDIS_ADDR=127.0.0.1:6379 go test -run '^$' -bench 'BenchmarkSchemaScan$' -benchtime 3x .
func BenchmarkSchemaScan(b *testing.B) {
	if os.Getenv("REDIS_CLUSTER_ADDRS") != "" {
		b.Skip("standalone only: the fill pipelines keys of every slot")
	}
	e := benchutil.New(b)
	ctx := b.Context()
	reg, err := keys.Compose(dashboard.Schemas()...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unlinkUnder(b, e.Client, e.NS.Prefix) })
	owned, err := fillSchemaScan(ctx, e.Client, reg, e.NS)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("200k", func(b *testing.B) {
		var rep *keys.AuditReport
		cpu0 := benchutil.ProcessCPU()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			rep, err = reg.Audit(ctx, e.Client, keys.AuditOptions{Namespace: e.NS})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric((benchutil.ProcessCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/scan")
		var matched int64
		for _, s := range rep.Patterns {
			matched += s.Keys
		}
		if rep.Scanned != owned+schemaScanKeys/2 || matched != owned || rep.Unmatched != schemaScanKeys/2 {
			b.Fatalf("scanned %d, matched %d, unmatched %d; want %d, %d, %d", rep.Scanned, matched, rep.Unmatched, owned+schemaScanKeys/2, owned, schemaScanKeys/2)
		}
	})
}

// fillSchemaScan writes BenchmarkSchemaScan's keys under ns, 1,000
// commands per pipeline: the library's patterns in turn, with distinct
// values, and strays. It returns how many distinct keys the patterns
// built (a pattern without placeholders builds one).
func fillSchemaScan(ctx context.Context, c redis.UniversalClient, reg *keys.Registry, ns keys.Namespace) (int64, error) {
	var ts []*keys.Template
	for _, t := range reg.Templates() {
		if !t.IsChannel() {
			ts = append(ts, t)
		}
	}
	owned := map[string]struct{}{}
	strays := []string{"zentoria:jobs:", "legacy:cache:", "tmp-", "bull:emails:"}
	pipe := c.Pipeline()
	flush := func(force bool) error {
		if pipe.Len() < 1000 && !(force && pipe.Len() > 0) {
			return nil
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	for i := 0; i < schemaScanKeys; i++ {
		var k string
		typ := keys.String
		if i%2 == 0 {
			t := ts[(i/2)%len(ts)]
			args := t.Params()
			for j := range args {
				args[j] = "v" + strconv.Itoa(i) + "x" + strconv.Itoa(j)
			}
			var err error
			if k, err = t.Key(ns, args...); err != nil {
				return 0, err
			}
			owned[k] = struct{}{}
			typ = t.Pattern().Type
		} else {
			k = ns.Prefix + strays[(i/2)%len(strays)] + strconv.Itoa(i)
		}
		switch typ {
		case keys.Hash:
			pipe.HSet(ctx, k, "f", "v")
		case keys.List:
			pipe.RPush(ctx, k, "v")
		case keys.Set:
			pipe.SAdd(ctx, k, "v")
		case keys.ZSet:
			pipe.ZAdd(ctx, k, redis.Z{Score: 1, Member: "v"})
		case keys.Stream:
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []any{"f", "v"}})
		default:
			pipe.Set(ctx, k, "v", 0)
		}
		pipe.Expire(ctx, k, time.Hour)
		if err := flush(false); err != nil {
			return 0, err
		}
	}
	return int64(len(owned)), flush(true)
}

// unlinkUnder removes every key under prefix, 1,000 per UNLINK.
func unlinkUnder(b *testing.B, c redis.UniversalClient, prefix string) {
	ctx := context.Background()
	var cursor uint64
	for {
		ks, next, err := c.Scan(ctx, cursor, keys.Namespace{Prefix: prefix}.Match(), 1000).Result()
		if err != nil {
			b.Error(err)
			return
		}
		if len(ks) > 0 {
			if err := c.Unlink(ctx, ks...).Err(); err != nil {
				b.Error(err)
				return
			}
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}
