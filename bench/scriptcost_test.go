package bench

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
)

// BenchmarkScriptCost prices the parts of a script call on the server,
// one part per sub-benchmark, so that a row's Redis CPU can be read as a
// sum: the EVALSHA itself, each key and argument it carries, each
// redis.call it makes, against a plain command. Every sub-benchmark sends
// its calls from one goroutine in pipelines of 4 (the auto-pipeline's
// usual batch at the packages' defaults), all keys under one hash tag.
// Run it under callgrind for exact counts (bench/README.md, "What a
// script call costs"):
//
//	BENCH_CALLGRIND_PID=<pid> REDIS_ADDR=127.0.0.1:6391 \
//	  go test -run '^$' -bench BenchmarkScriptCost -benchtime 4000x .
//
// The last two rows test an idea the library does not use: several calls
// of one script joined into one EVALSHA (a Lua loop calling the body once
// per call), which saves the per-EVALSHA cost but adds the loop's tables:
// about a tenth less on this two-command script, while a trial on the
// heartbeat and Create scripts cost the server more (bench/README.md).
func BenchmarkScriptCost(b *testing.B) {
	const (
		timeExpire = "redis.call('TIME')\nredis.call('PEXPIRE', KEYS[1], ARGV[1])\nreturn 'ok'"
		// batched runs timeExpire once per call: KEYS and ARGV hold one
		// key and one argument per call.
		batched = `local function op(KEYS, ARGV)
` + timeExpire + `
end
local out = {}
for i = 1, #KEYS do
  local ok, r = pcall(op, {KEYS[i]}, {ARGV[i]})
  out[i] = ok and r or {err = "ERR batched call failed"}
end
return out`
	)
	type row struct {
		name  string
		src   string // a script; "" sends a plain PEXPIRE
		keys  int
		args  int
		batch bool // the pipeline's 4 calls as one call of src
	}
	rows := []row{
		{name: "plain-PEXPIRE", keys: 1},
		{name: "script-empty", src: "return 'ok'"},
		{name: "script-empty-5-keys", src: "return 'ok'", keys: 5},
		{name: "script-empty-7-args", src: "return 'ok'", args: 7},
		{name: "script-TIME", src: "redis.call('TIME')\nreturn 'ok'"},
		{name: "script-PEXPIRE", src: "redis.call('PEXPIRE', KEYS[1], '60000')\nreturn 'ok'", keys: 1},
		{name: "script-TIME-PEXPIRE", src: timeExpire, keys: 1, args: 1},
		{name: "batched-4-TIME-PEXPIRE", src: batched, keys: 1, args: 1, batch: true},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			e := benchutil.New(b)
			ctx := context.Background()
			ks := make([]string, r.keys)
			for i := range ks {
				ks[i] = e.NS.Prefix + "{cost}:" + strconv.Itoa(i)
			}
			args := make([]any, r.args)
			for i := range args {
				args[i] = "60000"
			}
			var s *redis.Script
			if r.src != "" {
				s = redis.NewScript(r.src)
				if err := s.Load(ctx, e.Client).Err(); err != nil {
					b.Fatal(err)
				}
			}
			if r.batch { // the 4 calls' keys and arguments, one after another
				ks = append(append(append(ks, ks...), ks...), ks...)
				args = append(append(append(args, args...), args...), args...)
			}
			send := func(n int) error { // n calls, at most 4
				pipe := e.Client.Pipeline()
				switch {
				case s == nil:
					for range n {
						pipe.PExpire(ctx, ks[0], time.Minute)
					}
				case r.batch:
					s.EvalSha(ctx, pipe, ks[:n*r.keys], args[:n*r.args]...)
				default:
					for range n {
						s.EvalSha(ctx, pipe, ks[:r.keys], args[:r.args]...)
					}
				}
				_, err := pipe.Exec(ctx)
				return err
			}
			// The key exists, so that PEXPIRE works on it.
			if r.keys > 0 {
				if err := e.Client.Set(ctx, ks[0], "1", 0).Err(); err != nil {
					b.Fatal(err)
				}
			}
			if err := send(4); err != nil {
				b.Fatal(err)
			}
			if s != nil { // every call answers 'ok', joined ones too
				var want any = "ok"
				if r.batch {
					want = []any{"ok", "ok", "ok", "ok"}
				}
				got, err := s.Run(ctx, e.Client, ks, args...).Result()
				if err != nil || !reflect.DeepEqual(got, want) {
					b.Fatalf("the script answered %v, %v; want %v", got, err, want)
				}
			}
			e.Warm(b)
			b.ResetTimer()
			for i := 0; i < b.N; i += 4 {
				if err := send(min(4, b.N-i)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			e.ReportTrips(b)
		})
	}
}
