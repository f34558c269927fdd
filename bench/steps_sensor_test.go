package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Sensor ingest, step by step (the second table: one sensor
// reading through the library costs Redis about 2.5 times the seed's
// ZADD + ZREMRANGEBYSCORE + EXPIRE). The sensor package sends its calls
// one round trip each, without auto-pipelining (an Ingest is one
// pipeline of two scripts), so these steps do too.
var (
	stepSensorRaw    = keys.MustCompile(keys.Pattern{Template: "steps:sensor:environmental:{location}", Type: keys.ZSet, TTL: 24 * time.Hour, Tag: "location", Owner: "bench-steps"})
	stepSensorTypes  = keys.MustCompile(keys.Pattern{Template: "steps:sensor-index:types:{location}", Type: keys.ZSet, TTL: 24 * time.Hour, Tag: "location", Owner: "bench-steps"})
	stepSensorMinute = keys.MustCompile(keys.Pattern{Template: "steps:sensor-rollup:1m:temperature:{location}", Type: keys.ZSet, TTL: 7 * 24 * time.Hour, Tag: "location", Owner: "bench-steps"})
	stepSensorHour   = keys.MustCompile(keys.Pattern{Template: "steps:sensor-rollup:1h:temperature:{location}", Type: keys.ZSet, TTL: 90 * 24 * time.Hour, Tag: "location", Owner: "bench-steps"})
	stepSensorLocs   = keys.MustCompile(keys.Pattern{Template: "steps:sensor-index:locations", Type: keys.ZSet, TTL: 24 * time.Hour, Owner: "bench-steps"})
)

// Ingest's commands, as ingest_zset_fast.lua runs them for a temperature
// reading whose rollup buckets exist (the common case). KEYS raw set,
// types index, minute rollup, hour rollup; ARGV timestamp (ms), member,
// trim bound ("(" and ms), retention (ms), sensor type, minute bucket
// start, its new member, hour bucket start, its new member, minute and
// hour retention (ms). A rollup step reads the bucket's member and
// replaces it (the only Lua besides the commands: the member read is the
// member removed).
const (
	snSeed = `redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
`
	snTime  = "redis.call('TIME')\n"
	snDup   = "redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1])\n"
	snTypes = `redis.call('ZSCORE', KEYS[2], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[4], 'GT')
`
	snRollups = `local m1 = redis.call('ZRANGEBYSCORE', KEYS[3], ARGV[6], ARGV[6])[1]
local m2 = redis.call('ZRANGEBYSCORE', KEYS[4], ARGV[8], ARGV[8])[1]
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[7])
redis.call('ZREM', KEYS[3], m1 or '')
redis.call('ZADD', KEYS[4], ARGV[8], ARGV[9])
redis.call('ZREM', KEYS[4], m2 or '')
`
	// snLocation is the second script of each Ingest from the
	// locations-index step on: touch_location_fast.lua's one read.
	snLocation = "redis.call('ZSCORE', KEYS[1], ARGV[1])\nreturn 'ok'\n"
)

// sensorSteps: the seed's three commands in one script, then server
// time, then the check that recognises a resent reading (and applies the
// duplicate policy), then the types index, then the locations index (a
// second script in the same pipeline), then the minute and hour rollups.
var sensorSteps = steps("return {'ok', 'stored'}\n",
	[]string{"seed-commands-in-one-script", snSeed},
	[]string{"server-time", snTime, snSeed},
	[]string{"resend-and-duplicate-check", snTime, snDup, snSeed},
	[]string{"types-index", snTime, snDup, snSeed, snTypes},
	[]string{"locations-index", snTime, snDup, snSeed, snTypes},
	[]string{"rollups", snTime, snDup, snSeed, snTypes, snRollups},
)

// sensorStepKeys is how many of the step script's keys step i (from 0)
// passes: those its commands touch.
var sensorStepKeys = []int{1, 1, 1, 2, 2, 4}

// sensorStepsLocation is the first step that sends the locations script.
const sensorStepsLocation = 4

var stepLocationOp = stepsPkg.Declare("sensor-location", snLocation, []*keys.Template{stepSensorLocs})

// BenchmarkSensorIngestSteps: sensor Ingest's commands, step by step from
// the seed's (see sensorSteps), over BenchmarkSensorIngest's 64
// locations at its concurrency, with its metrics.
func BenchmarkSensorIngestSteps(b *testing.B) {
	for si, st := range sensorSteps {
		ts := []*keys.Template{stepSensorRaw, stepSensorTypes, stepSensorMinute, stepSensorHour}[:sensorStepKeys[si]]
		op := stepsPkg.Declare("sensor-"+st.name, st.src, ts)
		b.Run(st.name, func(b *testing.B) {
			e := benchutil.New(b)
			run := call.NewRunner(e.Client, 0)
			locs := e.NS.Prefix + "steps:sensor-index:locations"
			ks := make([][]string, len(sensorLocs))
			for i, l := range sensorLocs {
				ks[i] = stepKeys(b, e.NS, l, ts...)
			}
			const ret, minKeep, hourKeep = 86400000, 7 * 86400000, 90 * 86400000
			sensorRun(b, e, 1, scriptCommands, func(ctx context.Context, i int) error {
				now := time.Now()
				ms := now.UnixMilli()
				v := 20 + float64(i%100)/10
				loc := sensorLocs[i%64]
				m, err := json.Marshal(struct {
					seedReading
					ID string `json:"id"`
				}{seedReading{now.UTC().Format("2006-01-02T15:04:05.000Z"), ms, v, "°C"}, "r" + strconv.Itoa(i) + "-0123456789abcdef"})
				if err != nil {
					return err
				}
				mb, hb := ms-ms%60000, ms-ms%3600000
				roll := func(start int64) string {
					vs := strconv.FormatFloat(v, 'f', -1, 64)
					return strconv.FormatInt(start, 10) + ":" + strconv.Itoa(i) + ":" + vs + ":" + vs + ":" + vs + ":" + vs + ":" + strconv.FormatInt(ms, 10) + ":" + vs + ":" + strconv.FormatInt(ms, 10)
				}
				args := []any{ms, m, "(" + strconv.FormatInt(ms-ret, 10), ret, "temperature",
					mb, roll(mb), hb, roll(hb), minKeep, hourKeep}
				if si < sensorStepsLocation {
					_, err = run.Run(ctx, op, ks[i%64], args...)
					return err
				}
				_, errs := run.RunMany(ctx, []call.Call{
					{Op: op, Keys: ks[i%64], Args: args},
					{Op: stepLocationOp, Keys: []string{locs}, Args: []any{loc, ms}},
				})
				return errs[0]
			})
		})
	}
}
