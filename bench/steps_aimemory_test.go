package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// AI memory append, step by step from the naive RPUSH + LTRIM + EXPIRE.
// The aimemory package sends each call as one script, auto-pipelined on
// 4 lanes (its default), so these steps do too. A user's keys share
// the user's tag, as the package's do.
var (
	stepAIConv  = keys.MustCompile(keys.Pattern{Template: "steps:ai:conv:{user_id}:{conversation_id}", Type: keys.List, TTL: time.Hour, Tag: "user_id", Owner: "bench-steps"})
	stepAIUser  = keys.MustCompile(keys.Pattern{Template: "steps:ai:user:{user_id}", Type: keys.Hash, TTL: time.Hour, Tag: "user_id", Owner: "bench-steps"})
	stepAIMemo  = keys.MustCompile(keys.Pattern{Template: "steps:ai:conv-reqs:{user_id}:{conversation_id}", Type: keys.ZSet, TTL: time.Hour, Tag: "user_id", Owner: "bench-steps"})
	stepAIIndex = keys.MustCompile(keys.Pattern{Template: "steps:ai:user-convs:{user_id}", Type: keys.ZSet, TTL: time.Hour, Tag: "user_id", Owner: "bench-steps"})
	stepAIMeta  = keys.MustCompile(keys.Pattern{Template: "steps:ai:conv-meta:{user_id}:{conversation_id}", Type: keys.Hash, TTL: time.Hour, Tag: "user_id", Owner: "bench-steps"})
)

// Append's commands, as append.lua runs them for one user message into
// a conversation at its cap whose oldest message is not a system prompt
// (the benchmark's case). KEYS (in the order the steps first need them):
// 1 the conversation, 2 the user's hash, 3 the request memo, 4 the
// user's conversations, 5 the conversation's meta. ARGV: the message,
// conversation TTL (ms), first message kept (LTRIM start), now (ms),
// tokens of the day, the day, conversation ID, user TTL (ms), request
// ID, memo reply member, memo trim bound, replay window (ms), the
// conversation's expiry (ms).
const (
	aiNaive = `redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], ARGV[3], '-1')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
`
	aiTime = "redis.call('TIME')\n"
	aiMemo = `redis.call('ZSCORE', KEYS[3], ARGV[9])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[9], ARGV[4], ARGV[10])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[11])
redis.call('PEXPIRE', KEYS[3], ARGV[12])
`
	aiEvict = `redis.call('LLEN', KEYS[1])
redis.call('LINDEX', KEYS[1], '0')
redis.call('LRANGE', KEYS[1], '0', '0')
redis.call('LINDEX', KEYS[1], '1')
`
	aiDaily = `redis.call('HMGET', KEYS[2], 'tokens_day', 'total_tokens_today')
redis.call('HSET', KEYS[2], 'tokens_day', ARGV[6], 'total_tokens_today', ARGV[5], 'last_conversation_id', ARGV[7])
redis.call('PEXPIRE', KEYS[2], ARGV[8])
`
	aiIndex = `redis.call('ZCARD', KEYS[4])
redis.call('ZADD', KEYS[4], ARGV[13], ARGV[7])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[4])
redis.call('PTTL', KEYS[4])
redis.call('PEXPIRE', KEYS[4], ARGV[2])
redis.call('PEXPIRE', KEYS[5], ARGV[2])
`
)

// aimemorySteps: the naive three commands in one script; then server
// time; then the request memo that recognises a resent Append; then the
// eviction's reads (the length, the oldest message for a pinned system
// prompt, the evicted ones, and the next for a tool result that must go
// with its call); then the user's tokens of the day; then the user's
// conversation list and the meta's TTL.
var aimemorySteps = steps("return {'ok', 50, 1, ARGV[5], 0, 0}\n",
	[]string{"naive-commands-in-one-script", aiNaive},
	[]string{"server-time", aiTime, aiNaive},
	[]string{"resend-memo", aiTime, aiMemo, aiNaive},
	[]string{"eviction-reads", aiTime, aiMemo, aiEvict, aiNaive},
	[]string{"daily-tokens", aiTime, aiDaily, aiMemo, aiEvict, aiNaive},
	[]string{"conversation-list", aiTime, aiDaily, aiMemo, aiEvict, aiNaive, aiIndex},
)

// aimemoryStepKeys is how many KEYS step i (from 0) passes.
var aimemoryStepKeys = []int{1, 1, 3, 3, 3, 5}

// BenchmarkAIMemoryAppendSteps: aimemory Append's commands, step by step
// from the naive ones (see aimemorySteps), over BenchmarkAIMemory's 200
// conversations at their cap of 50, at its concurrency. Each
// conversation's request memo starts as BenchmarkAIMemory's fill leaves
// it: the 50 appends that filled it, within the replay window. The
// memo's cost grows with the appends it holds (a listpack of up to 128
// members is scanned by ZSCORE and ZADD), so a step row whose memo
// started empty priced it for 5 appends, not 55.
func BenchmarkAIMemoryAppendSteps(b *testing.B) {
	msg, err := json.Marshal(map[string]any{"role": "user", "content": aiContent, "timestamp": "2026-01-16T10:00:00.000Z", "tokens": aiTokens})
	if err != nil {
		b.Fatal(err)
	}
	for si, st := range aimemorySteps {
		op := stepsPkg.Declare("aimemory-append-"+st.name, st.src, []*keys.Template{stepAIConv}, call.Shared())
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			run := call.NewRunner(e.Client, stepsLanes)
			ctx := context.Background()
			ks := make([][]string, aiConvs)
			pipe := e.Client.Pipeline()
			fill := make([]any, aiCap)
			for i := range fill {
				fill[i] = msg
			}
			for c := range aiConvs {
				u, conv := aiUserConv(c)
				var all []string
				for _, t := range []*keys.Template{stepAIConv, stepAIUser, stepAIMemo, stepAIIndex, stepAIMeta} {
					vals := []string{u, conv}
					if t == stepAIUser || t == stepAIIndex {
						vals = vals[:1]
					}
					k, err := t.Key(e.NS, vals...)
					if err != nil {
						b.Fatal(err)
					}
					all = append(all, k)
				}
				ks[c] = all[:aimemoryStepKeys[si]]
				pipe.RPush(ctx, all[0], fill...)
				// The memo as the full row's fill leaves it: the 50
				// appends that filled the conversation, within the
				// replay window (two members each).
				memo := make([]redis.Z, 0, 2*aiCap)
				now := float64(time.Now().UnixMilli())
				for i := range aiCap {
					id := strconv.FormatInt(0x2000000000000000+int64(c*aiCap+i), 16)
					memo = append(memo, redis.Z{Score: now, Member: id}, redis.Z{Score: now, Member: id + "=50,1," + strconv.Itoa((i+1)*aiTokens) + ",0"})
				}
				pipe.ZAdd(ctx, all[2], memo...)
				pipe.PExpire(ctx, all[2], 3*time.Minute)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			const ttl, userTTL, replay = 30 * 24 * 3600000, 90 * 24 * 3600000, 180000
			var next atomic.Int64
			var tokens atomic.Int64
			e.Warm(b)
			usec := sensorUsec(ctx, e.Client, aiCommands["redschema"])
			b.ReportAllocs()
			b.SetParallelism(aiParallel)
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c := int(next.Add(1) % aiConvs)
					_, conv := aiUserConv(c)
					now := time.Now().UnixMilli()
					req := strconv.FormatInt(0x1000000000000000+next.Load(), 16)
					total := tokens.Add(aiTokens)
					if _, err := run.Run(ctx, op, ks[c], msg, ttl, 1, now, total, "2026-11-30", conv, userTTL,
						req, req+"=50,1,"+strconv.FormatInt(total, 10)+",0", "("+strconv.FormatInt(now-replay, 10), replay, now+ttl); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			elapsed := time.Since(start)
			e.ReportTrips(b)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
			b.ReportMetric((sensorUsec(ctx, e.Client, aiCommands["redschema"])-usec)/float64(b.N), "redis-µs/op")
		})
	}
}
