package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Cache Set and miss + load, step by step from go-redis/cache's
// commands. The cache package's scripts share pipelines with concurrent
// calls (auto-pipelining on 4 lanes, its default), so these steps' do
// too. An entry's value and metadata share its tag.
var (
	stepCacheValue = keys.MustCompile(keys.Pattern{Template: "steps:cache:{entry}", Type: keys.String, TTL: time.Hour, Tag: "entry", Owner: "bench-steps"})
	stepCacheMeta  = keys.MustCompile(keys.Pattern{Template: "steps:cache-meta:{entry}", Type: keys.Hash, TTL: time.Hour, Tag: "entry", Owner: "bench-steps"})
)

// stepCacheLanes is the cache package's default pipelining.
const stepCacheLanes = 4

// The cache's commands, as its scripts run them. KEYS value, metadata;
// ARGV the value, its life (ms), the writer's ID, created_at, size, the
// hint, the channel, the event, the lease's deadline (ms), the lease (ms).
const (
	caGet   = "redis.call('GET', KEYS[1])\n"
	caFresh = "redis.call('PTTL', KEYS[1])\nredis.call('HGET', KEYS[2], 'hint')\n"
	caLease = `redis.call('HMGET', KEYS[2], 'hint', 'lease', 'fresh_until_ms', 'state')
redis.call('GET', KEYS[1])
redis.call('TIME')
redis.call('HSET', KEYS[2], 'lease', ARGV[9])
redis.call('PEXPIRE', KEYS[2], ARGV[10])
`
	caSet       = "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
	caLeaseHeld = "redis.call('HMGET', KEYS[2], 'lease', 'wid', 'waiters')\n"
	caMeta      = `redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'created_at', ARGV[4], 'hits', '0', 'size_bytes', ARGV[5], 'hint', ARGV[6], 'wid', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
`
	caEvent = "redis.call('PUBLISH', ARGV[7], ARGV[8])\n"
)

// cacheSetSteps: go-redis/cache's SET in one script; then the metadata
// hash (created_at, hits, size, the freshness hint, the writer); then
// the event that drops other processes' local copies. These are the
// write script's commands, which a tagged Set runs; the package sends an
// untagged Set (BenchmarkCacheSet's) as one MULTI/EXEC of the same
// writes instead, which costs Redis less than step 1 (docs/cache.md,
// "What a miss and a Set cost"), and one set event for all the Sets of a
// round trip.
var cacheSetSteps = steps("return {'ok', 0}\n",
	[]string{"peer-set-in-one-script", caSet},
	[]string{"metadata-hash", caSet, caMeta},
	[]string{"set-event", caSet, caMeta, caEvent},
)

// cacheMissStep is one miss + load step: its read script, its lease
// script ("" for none) and its write script.
type cacheMissStep struct{ name, read, lease, write string }

// cacheMissSteps: go-redis/cache's GET and SET, each in a script; then
// the read's freshness (the value's TTL and the metadata's hint, for
// stale-while-revalidate); then the lease that lets one loader of all
// processes load (a script between the read and the write); then the
// write's lease check and the metadata hash. The cache's own read is
// plain commands (GET, PTTL, HGET), not a script.
var cacheMissSteps = []cacheMissStep{
	{"1-peer-get-and-set-in-scripts", caGet, "", caSet},
	{"2-freshness-reads", caGet + caFresh, "", caSet},
	{"3-lease", caGet + caFresh, caLease, caSet},
	{"4-lease-check-and-metadata", caGet + caFresh, caLease, caLeaseHeld + caSet + caMeta},
}

// cacheStepArgs are a write's arguments for value v of entry i.
func cacheStepArgs(e *benchutil.Env, v []byte, i int64) []any {
	now := time.Now()
	return []any{v, cacheTTL.Milliseconds(), "w" + strconv.FormatInt(i, 36) + "-0123456789ab", now.UTC().Format(time.RFC3339), len(v), "0:1",
		e.NS.Prefix + "cache:events", "k origin-0123456789ab " + strconv.FormatInt(i, 10), "w" + strconv.FormatInt(i, 36) + ":" + strconv.FormatInt(now.UnixMilli()+30000, 10), 30000}
}

// BenchmarkCacheSetSteps: cache Set's commands, step by step from
// go-redis/cache's SET (see cacheSetSteps), over BenchmarkCacheSet's
// 1,000 entries at its concurrency.
func BenchmarkCacheSetSteps(b *testing.B) {
	for _, st := range cacheSetSteps {
		op := stepsPkg.Declare("cache-set-"+st.name, st.src, []*keys.Template{stepCacheValue, stepCacheMeta}, call.Shared())
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			run := call.NewRunner(e.Client, stepCacheLanes)
			ks := make([][]string, cacheKeys)
			vs := make([][]byte, cacheKeys)
			for i := range ks {
				ks[i] = stepKeys(b, e.NS, strconv.Itoa(i), stepCacheValue, stepCacheMeta)
				v, err := json.Marshal(newCacheValue(i))
				if err != nil {
					b.Fatal(err)
				}
				vs[i] = v
			}
			cacheRun(b, e, func(ctx context.Context, n int64) error {
				i := int(n % cacheKeys)
				_, err := run.Run(ctx, op, ks[i], cacheStepArgs(e, vs[i], n)...)
				return err
			})
		})
	}
}

// BenchmarkCacheMissLoadSteps: cache Get's commands on a miss (read,
// load, store), step by step from go-redis/cache's GET and SET (see
// cacheMissSteps), over keys no one used, at BenchmarkCacheMissLoad's
// concurrency; the loader returns at once.
func BenchmarkCacheMissLoadSteps(b *testing.B) {
	for _, st := range cacheMissSteps {
		ts := []*keys.Template{stepCacheValue, stepCacheMeta}
		read := stepsPkg.Declare("cache-read-"+st.name, st.read+"return {'ok', 'miss'}\n", ts, call.Shared())
		write := stepsPkg.Declare("cache-write-"+st.name, st.write+"return {'ok', 0}\n", ts, call.Shared())
		var lease *call.Op
		if st.lease != "" {
			lease = stepsPkg.Declare("cache-lease-"+st.name, st.lease+"return {'ok', 'lease'}\n", ts, call.Shared())
		}
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			run := call.NewRunner(e.Client, stepCacheLanes)
			var miss atomic.Int64
			cacheRun(b, e, func(ctx context.Context, _ int64) error {
				n := miss.Add(1)
				i := int(n) + cacheKeys
				ks := stepKeys(b, e.NS, strconv.Itoa(i), ts...)
				args := cacheStepArgs(e, nil, n)
				if _, err := run.Run(ctx, read, ks); err != nil {
					return err
				}
				if lease != nil {
					if _, err := run.Run(ctx, lease, ks, args...); err != nil {
						return err
					}
				}
				v, err := json.Marshal(newCacheValue(i)) // the load
				if err != nil {
					return err
				}
				args[0], args[4] = v, len(v)
				_, err = run.Run(ctx, write, ks, args...)
				return err
			})
		})
	}
}
