package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/sensor"
)

// seed003 is seed 003's collector, command for command: per reading a
// ZADD, ZREMRANGEBYSCORE and EXPIRE on the sorted set (plus HSET and
// EXPIRE of meta:motion on "on"), or an LPUSH, LTRIM, EXPIRE, HSET and
// EXPIRE for a generic type; all of a call's commands in one pipeline
// (the seed's best case: one round trip). Keys as the seed spells them,
// under a prefix.
type seed003 struct {
	c      redis.UniversalClient
	prefix string
}

// seedReading is a temperature reading in the seed's JSON.
type seedReading struct {
	Timestamp   string  `json:"timestamp"`
	CollectedAt int64   `json:"collected_at"`
	Temperature float64 `json:"temperature"`
	Unit        string  `json:"temperature_unit"`
}

func (s seed003) envKey(loc string) string { return s.prefix + "sensor:environmental:" + loc }

// queue adds one temperature reading's commands to pipe.
func (s seed003) queue(ctx context.Context, pipe redis.Pipeliner, loc string, v float64, at time.Time) {
	m, _ := json.Marshal(seedReading{at.UTC().Format("2006-01-02T15:04:05.000Z"), time.Now().UnixMilli(), v, "°C"})
	k := s.envKey(loc)
	ms := at.UnixMilli()
	pipe.ZAdd(ctx, k, redis.Z{Score: float64(ms), Member: m})
	pipe.ZRemRangeByScore(ctx, k, "-inf", "("+strconv.FormatInt(time.Now().UnixMilli()-86400000, 10))
	pipe.Expire(ctx, k, 24*time.Hour)
}

func (s seed003) ingest(ctx context.Context, loc string, v float64, at time.Time) error {
	pipe := s.c.Pipeline()
	s.queue(ctx, pipe, loc, v, at)
	_, err := pipe.Exec(ctx)
	return err
}

func (s seed003) ingestBatch(ctx context.Context, locs []string, vs []float64, at []time.Time) error {
	pipe := s.c.Pipeline()
	for i := range locs {
		s.queue(ctx, pipe, locs[i], vs[i], at[i])
	}
	_, err := pipe.Exec(ctx)
	return err
}

// seedCommands are the commands seed003 runs, for Redis CPU.
var seedCommands = []string{"zadd", "zremrangebyscore", "expire"}

// scriptCommands are what a redschema call runs (the script's own
// commands are inside its EVALSHA time).
var scriptCommands = []string{"evalsha", "eval"}

// sensorUsec sums INFO commandstats usec of cmds over every master. This
// helper is not in benchutil yet (it would serve every bench file).
func sensorUsec(ctx context.Context, c redis.UniversalClient, cmds []string) float64 {
	var total atomic.Int64
	read := func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\n") {
			for _, cmd := range cmds {
				if !strings.HasPrefix(line, "cmdstat_"+cmd+":") {
					continue
				}
				for _, f := range strings.Split(strings.TrimSpace(line[len("cmdstat_"+cmd+":"):]), ",") {
					if v, ok := strings.CutPrefix(f, "usec="); ok {
						n, _ := strconv.ParseInt(v, 10, 64)
						total.Add(n)
					}
				}
			}
		}
		return nil
	}
	var err error
	switch cc := c.(type) {
	case *redis.ClusterClient:
		err = cc.ForEachMaster(ctx, read)
	case *redis.Client:
		err = read(ctx, cc)
	}
	if err != nil {
		return math.NaN()
	}
	return float64(total.Load())
}

// sensorRun runs op in parallel, and reports round trips, readings/s
// (per reading, n readings an op) and Redis CPU per op (µs of cmds).
func sensorRun(b *testing.B, e *benchutil.Env, n int, cmds []string, op func(ctx context.Context, i int) error) {
	ctx := context.Background()
	var i atomic.Int64
	e.Warm(b)
	before := sensorUsec(ctx, e.Client, cmds)
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(ctx, int(i.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	el := time.Since(start)
	b.StopTimer()
	e.ReportTrips(b)
	b.ReportMetric(float64(b.N*n)/el.Seconds(), "readings/s")
	b.ReportMetric((sensorUsec(ctx, e.Client, cmds)-before)/float64(b.N), "redis-µs/op")
}

var sensorLocs = func() []string {
	out := make([]string, 64)
	for i := range out {
		out[i] = "room-" + strconv.Itoa(i)
	}
	return out
}()

func sensorClient(b *testing.B, e *benchutil.Env, opts ...sensor.Option) *sensor.Client {
	c, err := sensor.New(e.Client, append([]sensor.Option{sensor.WithNamespace(e.NS)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

var sensorVariants = []struct {
	name string
	opts []sensor.Option
}{
	{"redschema", nil},
	{"redschema-norollups", []sensor.Option{sensor.WithoutRollups()}},
	{"redschema-compact", []sensor.Option{sensor.WithCompactEncoding()}},
}

// BenchmarkSensorIngest: one temperature reading, in one of 64
// locations. redschema: one script (duplicate check, trim, TTL, index,
// minute and hour rollups); seed003: ZADD + ZREMRANGEBYSCORE + EXPIRE in
// one pipeline.
func BenchmarkSensorIngest(b *testing.B) {
	for _, v := range sensorVariants {
		b.Run(v.name, func(b *testing.B) {
			e := benchutil.New(b)
			c := sensorClient(b, e, v.opts...)
			sensorRun(b, e, 1, scriptCommands, func(ctx context.Context, i int) error {
				_, err := c.Ingest(ctx, sensor.TemperatureReading(sensorLocs[i%64], 20+float64(i%100)/10, "°C", time.Now()))
				return err
			})
		})
	}
	b.Run("seed003", func(b *testing.B) {
		e := benchutil.New(b)
		s := seed003{c: e.Client, prefix: e.NS.Prefix}
		sensorRun(b, e, 1, seedCommands, func(ctx context.Context, i int) error {
			return s.ingest(ctx, sensorLocs[i%64], 20+float64(i%100)/10, time.Now())
		})
	})
}

// sensorBatch is the size of one batch.
const sensorBatch = 100

// BenchmarkSensorIngestBatch: 100 temperature readings over 64
// locations in one pipeline (readings/s counts readings).
func BenchmarkSensorIngestBatch(b *testing.B) {
	for _, v := range sensorVariants {
		b.Run(v.name, func(b *testing.B) {
			e := benchutil.New(b)
			c := sensorClient(b, e, v.opts...)
			sensorRun(b, e, sensorBatch, scriptCommands, func(ctx context.Context, i int) error {
				rs := make([]sensor.Reading, sensorBatch)
				now := time.Now()
				for j := range rs {
					rs[j] = sensor.TemperatureReading(sensorLocs[(i+j)%64], 20+float64(j)/10, "°C", now)
				}
				_, err := c.IngestBatch(ctx, rs)
				return err
			})
		})
	}
	b.Run("seed003", func(b *testing.B) {
		e := benchutil.New(b)
		s := seed003{c: e.Client, prefix: e.NS.Prefix}
		sensorRun(b, e, sensorBatch, seedCommands, func(ctx context.Context, i int) error {
			locs, vs, at := make([]string, sensorBatch), make([]float64, sensorBatch), make([]time.Time, sensorBatch)
			now := time.Now()
			for j := range locs {
				locs[j], vs[j], at[j] = sensorLocs[(i+j)%64], 20+float64(j)/10, now
			}
			return s.ingestBatch(ctx, locs, vs, at)
		})
	})
}

// sensorDay is the number of readings in 24 h at one every 10 s.
const sensorDay = 8640

// fillDay writes a day of temperature readings (one every 10 s, the
// newest a second ago) with c, or with the seed's commands when c is nil.
func fillDay(b *testing.B, e *benchutil.Env, c *sensor.Client, loc string) time.Time {
	ctx := context.Background()
	now := time.Now()
	first := now.Add(-24*time.Hour + 10*time.Second)
	at := func(i int) time.Time { return first.Add(time.Duration(i) * 10 * time.Second).Add(-time.Second) }
	val := func(i int) float64 { return 20 + 3*math.Sin(float64(i)/500) }
	for lo := 0; lo < sensorDay; lo += 1000 {
		hi := min(lo+1000, sensorDay)
		if c == nil {
			s := seed003{c: e.Client, prefix: e.NS.Prefix}
			locs, vs, ts := make([]string, hi-lo), make([]float64, hi-lo), make([]time.Time, hi-lo)
			for i := lo; i < hi; i++ {
				locs[i-lo], vs[i-lo], ts[i-lo] = loc, val(i), at(i)
			}
			if err := s.ingestBatch(ctx, locs, vs, ts); err != nil {
				b.Fatal(err)
			}
			continue
		}
		rs := make([]sensor.Reading, 0, hi-lo)
		for i := lo; i < hi; i++ {
			rs = append(rs, sensor.TemperatureReading(loc, val(i), "°C", at(i)))
		}
		if _, err := c.IngestBatch(ctx, rs); err != nil {
			b.Fatal(err)
		}
	}
	return first.Add(-time.Second)
}

// seedRange is the seed's range query and decode: ZRANGEBYSCORE and JSON.
func seedRange(ctx context.Context, s seed003, loc string, from, to time.Time) ([]seedReading, error) {
	ms, err := s.c.ZRangeByScore(ctx, s.envKey(loc), &redis.ZRangeBy{Min: strconv.FormatInt(from.UnixMilli(), 10), Max: strconv.FormatInt(to.UnixMilli(), 10)}).Result()
	if err != nil {
		return nil, err
	}
	out := make([]seedReading, len(ms))
	for i, m := range ms {
		if err := json.Unmarshal([]byte(m), &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BenchmarkSensorRange24h: the 8,640 readings of the last 24 h, typed.
// redschema: one script (ZRANGEBYSCORE filtered to temperature) and Go
// decoding; seed003: ZRANGEBYSCORE and JSON decoding.
func BenchmarkSensorRange24h(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []sensor.Option
	}{{"redschema", nil}, {"redschema-compact", []sensor.Option{sensor.WithCompactEncoding()}}} {
		b.Run(v.name, func(b *testing.B) {
			e := benchutil.New(b)
			c := sensorClient(b, e, v.opts...)
			from := fillDay(b, e, c, "lab")
			sensorRun(b, e, 1, scriptCommands, func(ctx context.Context, _ int) error {
				rs, err := c.Range(ctx, sensor.Temperature, "lab", from, time.Now(), 0)
				if err == nil && len(rs) != sensorDay {
					err = fmt.Errorf("%d readings, want %d", len(rs), sensorDay)
				}
				return err
			})
		})
	}
	b.Run("seed003", func(b *testing.B) {
		e := benchutil.New(b)
		s := seed003{c: e.Client, prefix: e.NS.Prefix}
		from := fillDay(b, e, nil, "lab")
		sensorRun(b, e, 1, []string{"zrangebyscore"}, func(ctx context.Context, _ int) error {
			rs, err := seedRange(ctx, s, "lab", from, time.Now())
			if err == nil && len(rs) != sensorDay {
				err = fmt.Errorf("%d readings, want %d", len(rs), sensorDay)
			}
			return err
		})
	})
}

// BenchmarkSensorAggregate24h: hourly count, min, max, avg, first, last
// of the 8,640 readings of the last 24 h. redschema-raw folds the raw
// readings on the server; redschema (AutoTier) reads 25 hour rollups;
// seed003 fetches every reading and folds them in Go.
func BenchmarkSensorAggregate24h(b *testing.B) {
	for _, v := range []struct {
		name string
		tier sensor.Tier
		opts []sensor.Option
	}{
		{"redschema", sensor.AutoTier, nil},
		{"redschema-raw", sensor.RawTier, nil},
		{"redschema-compact-raw", sensor.RawTier, []sensor.Option{sensor.WithCompactEncoding()}},
	} {
		b.Run(v.name, func(b *testing.B) {
			e := benchutil.New(b)
			c := sensorClient(b, e, v.opts...)
			from := fillDay(b, e, c, "lab")
			sensorRun(b, e, 1, scriptCommands, func(ctx context.Context, _ int) error {
				s, err := c.Aggregate(ctx, sensor.Temperature, "lab", from, time.Now(), time.Hour, v.tier)
				if err == nil && len(s.Buckets) < 24 {
					err = fmt.Errorf("%d buckets", len(s.Buckets))
				}
				return err
			})
		})
	}
	b.Run("seed003", func(b *testing.B) {
		e := benchutil.New(b)
		s := seed003{c: e.Client, prefix: e.NS.Prefix}
		from := fillDay(b, e, nil, "lab")
		sensorRun(b, e, 1, []string{"zrangebyscore"}, func(ctx context.Context, _ int) error {
			rs, err := seedRange(ctx, s, "lab", from, time.Now())
			if err != nil {
				return err
			}
			type agg struct{ n, sum, lo, hi, first, last float64 }
			buckets := map[int64]*agg{}
			for _, r := range rs {
				t, err := time.Parse(time.RFC3339Nano, r.Timestamp)
				if err != nil {
					return err
				}
				k := t.UnixMilli() / 3600000
				a := buckets[k]
				if a == nil {
					a = &agg{lo: r.Temperature, hi: r.Temperature, first: r.Temperature}
					buckets[k] = a
				}
				a.n++
				a.sum += r.Temperature
				a.lo, a.hi, a.last = math.Min(a.lo, r.Temperature), math.Max(a.hi, r.Temperature), r.Temperature
			}
			if len(buckets) < 24 {
				return fmt.Errorf("%d buckets", len(buckets))
			}
			return nil
		})
	})
}

var (
	sensorMemOnce sync.Once
	sensorMem     map[string]float64
	sensorMemErr  error
)

// measureSensorMemory writes a day of readings (8,640, one every 10 s)
// of one sensor with each variant and returns Redis bytes per reading:
// every key the variant writes (the raw set, and for redschema the
// discovery index and the rollups unless noted).
func measureSensorMemory(b *testing.B) (map[string]float64, error) {
	sensorMemOnce.Do(func() {
		sensorMem = map[string]float64{}
		e := benchutil.New(b)
		ctx := context.Background()
		per := func(prefix string) (float64, error) {
			bytes, _, err := benchutil.MemoryUnder(ctx, e.Client, prefix)
			return float64(bytes) / sensorDay, err
		}
		sub := *e
		sub.NS = e.NS.Sub("seed003:")
		fillDay(b, &sub, nil, "lab")
		if sensorMem["seed003"], sensorMemErr = per(sub.NS.Prefix); sensorMemErr != nil {
			return
		}
		for _, v := range []struct {
			name string
			opts []sensor.Option
		}{
			{"redschema", nil},
			{"redschema-norollups", []sensor.Option{sensor.WithoutRollups()}},
			{"redschema-compact", []sensor.Option{sensor.WithCompactEncoding()}},
			{"redschema-compact-norollups", []sensor.Option{sensor.WithCompactEncoding(), sensor.WithoutRollups()}},
		} {
			ns := e.NS.Sub(v.name + ":")
			c, err := sensor.New(e.Client, append([]sensor.Option{sensor.WithNamespace(ns)}, v.opts...)...)
			if err != nil {
				sensorMemErr = err
				return
			}
			sub := *e
			sub.NS = ns
			fillDay(b, &sub, c, "lab")
			if sensorMem[v.name], sensorMemErr = per(ns.Prefix); sensorMemErr != nil {
				return
			}
		}
	})
	return sensorMem, sensorMemErr
}

// BenchmarkSensorMemory reports Redis bytes per reading (B/reading) and
// the ratio to the seed's JSON layout (x-seed). The timed loop is empty;
// the numbers are the metrics.
func BenchmarkSensorMemory(b *testing.B) {
	for _, name := range []string{"seed003", "redschema", "redschema-norollups", "redschema-compact", "redschema-compact-norollups"} {
		b.Run(name, func(b *testing.B) {
			m, err := measureSensorMemory(b)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
			}
			b.ReportMetric(m[name], "B/reading")
			b.ReportMetric(m[name]/m["seed003"], "x-seed")
		})
	}
}
