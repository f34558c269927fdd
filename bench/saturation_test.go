package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/ratelimit"
)

// saturationGoroutines are the loads of BenchmarkSaturation: more callers
// than the 16 of the other rows, enough to keep one Redis busy.
var saturationGoroutines = []int{64, 256}

// BenchmarkSaturation runs the rate limiter's single-rule check
// (FixedWindow, over 1,000 identifiers, admitted) on exactly g goroutines.
// cmd/compare sets its rate beside redis-benchmark's for an EVALSHA of
// INCR + PEXPIRE at -c g -P 16 on the same server in the same run: the
// most checks of that shape one Redis serves (see its saturation rows).
func BenchmarkSaturation(b *testing.B) {
	for _, g := range saturationGoroutines {
		b.Run("ratelimit-fixed/g="+strconv.Itoa(g), func(b *testing.B) {
			e, l := rlOurs(b, ratelimit.FixedWindow, rlRate)
			runGoroutines(b, e, g, func(ctx context.Context, _, i int) error {
				_, err := l.Allow(ctx, rlIDNames[i%rlIDs])
				return err
			})
		})
	}
}

// A fixed-window check's keys: its block key and its counter, under the
// identifier's tag.
var (
	stepBlockKey   = keys.MustCompile(keys.Pattern{Template: "steps:block:{id}", Type: keys.String, TTL: time.Hour, Tag: "id", Owner: "bench-steps"})
	stepCounterKey = keys.MustCompile(keys.Pattern{Template: "steps:counter:{id}", Type: keys.String, TTL: time.Hour, Tag: "id", Owner: "bench-steps"})
)

// The check's commands. KEYS the block key (from step 2), the counter.
const (
	satIncr      = "redis.call('INCR', KEYS[#KEYS])\nredis.call('PEXPIRE', KEYS[#KEYS], '3600000')\n"
	satBlockRead = "redis.call('GET', KEYS[1])\n"
)

// saturationSteps: the limit's own script (the INCR and PEXPIRE of one
// key that redis-benchmark sends), then the read of a second key, the
// block key, as the limiter's lean script (ratelimit/fixed.lua) does
// before its INCRBY. BenchmarkSaturation adds the lean script's checks,
// its PTTL for the window's reset and the Limiter's Go side.
var saturationSteps = steps("return 'ok'\n",
	[]string{"limit-script", satIncr},
	[]string{"block-read", satBlockRead, satIncr},
)

// BenchmarkSaturationSteps runs the saturation steps through the
// library's call layer, auto-pipelined on the packages' default lanes,
// over BenchmarkSaturation's identifiers and loads; and, as
// go-redis-autopipeline, step 1's script through go-redis's own
// auto-pipeliner (AutoPipeline, its blocking face, default options): the
// peer of the library's auto-pipelining (see bench/README.md, Saturation).
func BenchmarkSaturationSteps(b *testing.B) {
	tmpls := [][]*keys.Template{{stepCounterKey}, {stepBlockKey, stepCounterKey}}
	ops := make([]*call.Op, len(saturationSteps))
	for i, st := range saturationSteps {
		ops[i] = stepsPkg.Declare("saturation-"+st.name, st.src, tmpls[i], call.Shared())
	}
	for _, g := range saturationGoroutines {
		for i, st := range saturationSteps {
			b.Run(st.name+"/g="+strconv.Itoa(g), func(b *testing.B) {
				e := benchutil.New(b)
				run := call.NewRunner(e.Client, stepsLanes)
				ks := satStepKeys(b, e.NS, tmpls[i])
				runGoroutines(b, e, g, func(ctx context.Context, _, n int) error {
					_, err := run.Run(ctx, ops[i], ks[n%rlIDs])
					return err
				})
			})
		}
		b.Run("go-redis-autopipeline/g="+strconv.Itoa(g), func(b *testing.B) {
			e := benchutil.New(b)
			c, ok := e.Client.(interface {
				AutoPipeline() (*redis.AutoPipeliner, error)
			})
			if !ok {
				b.Fatalf("%T has no AutoPipeline", e.Client)
			}
			ap, err := c.AutoPipeline()
			if err != nil {
				b.Fatal(err)
			}
			if err := ops[0].Load(context.Background(), e.Client); err != nil {
				b.Fatal(err)
			}
			sha := ops[0].Script().Hash()
			ks := satStepKeys(b, e.NS, tmpls[0])
			runGoroutines(b, e, g, func(ctx context.Context, _, n int) error {
				return ap.EvalSha(ctx, sha, ks[n%rlIDs]).Err()
			})
		})
	}
}

// satStepKeys builds each identifier's keys from ts.
func satStepKeys(b testing.TB, ns keys.Namespace, ts []*keys.Template) [][]string {
	out := make([][]string, rlIDs)
	for i := range out {
		out[i] = stepKeys(b, ns, rlIDNames[i], ts...)
	}
	return out
}
