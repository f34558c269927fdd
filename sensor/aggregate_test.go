package sensor

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/internal/unit"
)

// goAggregate is the reference: the same buckets computed in Go.
func goAggregate(rs []Reading, every time.Duration) map[int64]Bucket {
	w := unit.MsFloor(every)
	out := map[int64]Bucket{}
	for _, r := range rs {
		t := r.Time.UnixMilli()
		b := t - t%w
		x, ok := out[b]
		if !ok {
			x = Bucket{Start: time.UnixMilli(b).UTC(), Min: r.Value, Max: r.Value, First: r.Value}
		}
		x.Count++
		x.Sum += r.Value
		x.Min, x.Max, x.Last = math.Min(x.Min, r.Value), math.Max(x.Max, r.Value), r.Value
		out[b] = x
	}
	for b, x := range out {
		x.Avg = x.Sum / float64(x.Count)
		out[b] = x
	}
	return out
}

// Aggregation over raw readings, the minute tier and the hour tier gives
// the same buckets as Go computing them from the readings, for every
// family and encoding, readings written out of order.
func TestAggregateTiersAgree(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			c := newClient(t, e, enc.opts...)
			now := e.Now().Truncate(time.Millisecond)
			from := now.Add(-3 * time.Hour)
			rng := rand.New(rand.NewPCG(1, 2))
			written := map[string][]Reading{}
			var batch []Reading
			for i := range 200 {
				at := from.Add(time.Duration(rng.Int64N(int64(3 * time.Hour))))
				v := math.Round(rng.Float64()*1000) / 10
				for _, r := range []Reading{
					TemperatureReading("lab", v, "°C", at),
					GenericReading("humidity", "lab", v, "%", at),
					MotionReading("lab", "m", rng.IntN(2) == 0, int64(i), at),
				} {
					r.Time = r.Time.Truncate(time.Millisecond)
					batch = append(batch, r)
				}
			}
			for i := 0; i < len(batch); i += 60 { // small pipelines: miniredis under -race is slow
				_, err := c.IngestBatch(ctx, batch[i:min(i+60, len(batch))])
				require.NoError(t, err)
			}
			for _, r := range batch {
				if r.Type == Motion && r.State == On {
					r.Value = 1
				}
				written[r.Type] = append(written[r.Type], r)
			}
			for typ, rs := range written {
				// The reference sorts by time; arrival order breaks ties,
				// which no reading here shares.
				sortByTime(rs)
				for _, every := range []time.Duration{time.Hour, 15 * time.Minute} {
					want := goAggregate(rs, every)
					for _, tier := range []Tier{RawTier, MinuteTier, HourTier} {
						if tier == HourTier && every < time.Hour {
							continue
						}
						s, err := c.Aggregate(ctx, typ, "lab", from, now, every, tier)
						require.NoError(t, err, "%s %v %s", typ, every, tier)
						assert.Equal(t, tier, s.Tier)
						require.Len(t, s.Buckets, len(want), "%s %v %s", typ, every, tier)
						for _, b := range s.Buckets {
							w := want[b.Start.UnixMilli()]
							assert.Equal(t, w.Count, b.Count, "%s %v %s %v", typ, every, tier, b.Start)
							assert.InDelta(t, w.Sum, b.Sum, 1e-6)
							assert.Equal(t, w.Min, b.Min)
							assert.Equal(t, w.Max, b.Max)
							assert.InDelta(t, w.Avg, b.Avg, 1e-9)
							assert.Equal(t, w.First, b.First, "%s %v %s first", typ, every, tier)
							assert.Equal(t, w.Last, b.Last, "%s %v %s last", typ, every, tier)
						}
					}
					auto, err := c.Aggregate(ctx, typ, "lab", from, now, every, AutoTier)
					require.NoError(t, err)
					if every == time.Hour {
						assert.Equal(t, HourTier, auto.Tier, "an hourly trend reads the hour tier")
					} else {
						assert.Equal(t, MinuteTier, auto.Tier)
					}
				}
			}
			s, err := c.Aggregate(ctx, Temperature, "lab", from, now, 10*time.Second, AutoTier)
			require.NoError(t, err)
			assert.Equal(t, RawTier, s.Tier, "sub-minute buckets read raw readings")
		})
	}
}

func sortByTime(rs []Reading) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].Time.Before(rs[j-1].Time); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// Each tier keeps its own retention: a week's trend comes from the hour
// tier after the raw readings and the minute buckets are gone.
func TestRollupRetentionPerTier(t *testing.T) {
	e := harness.New(t)
	e.RequireShortWaits(8 * 24 * time.Hour)
	ctx := e.Ctx()
	c := newClient(t, e, WithRollups(2*24*time.Hour, 30*24*time.Hour))
	start := e.Now().Truncate(time.Hour)
	for day := range 7 {
		for h := range 24 {
			_, err := c.Ingest(ctx, TemperatureReading("lab", float64(h), "°C", e.Now()))
			require.NoError(t, err)
			e.Advance(time.Hour)
		}
		_ = day
	}
	tg := c.mustTarget(t, Temperature, "lab")
	now := e.Now()
	assert.LessOrEqual(t, e.Client.ZCard(ctx, tg.raw).Val(), int64(25), "raw: 24 h")
	assert.LessOrEqual(t, e.Client.ZCard(ctx, tg.minute).Val(), int64(49), "minute tier: 2 days")
	assert.Equal(t, int64(7*24), e.Client.ZCard(ctx, tg.hour).Val(), "hour tier: all 7 days")
	week, err := c.Aggregate(ctx, Temperature, "lab", start, now, 24*time.Hour, AutoTier)
	require.NoError(t, err)
	assert.Equal(t, HourTier, week.Tier)
	var n int64
	for _, b := range week.Buckets {
		n += b.Count
	}
	assert.Equal(t, int64(7*24), n, "a week's trend from the hour tier")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, b := range week.Buckets {
		lo, hi = math.Min(lo, b.Min), math.Max(hi, b.Max)
	}
	assert.Equal(t, 0.0, lo)
	assert.Equal(t, 23.0, hi)
	_, err = c.Aggregate(ctx, Temperature, "lab", start, now, time.Minute, HourTier)
	require.ErrorIs(t, err, ErrInvalid, "minute buckets from the hour tier")
}

// A LastWins write that replaces readings stored without rollups (by the
// collector, or a WithoutRollups client) takes out of the rollups only
// what they can have counted: the bucket counts the new reading, and
// never holds a count below it (a negative count, which roll_parse takes
// for foreign data, failed every later write of the bucket).
func TestLastWinsOverUncountedReadings(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			raw := newClient(t, e, append([]Option{WithoutRollups()}, enc.opts...)...)
			c := newClient(t, e, append([]Option{WithDuplicates(LastWins)}, enc.opts...)...)
			minute := e.Now().Add(-time.Hour).Truncate(time.Minute)
			at := minute.Add(10 * time.Second)
			for _, v := range []float64{5, 6} {
				res, err := raw.Ingest(ctx, TemperatureReading("hall", v, "°C", at))
				require.NoError(t, err)
				require.Equal(t, Stored, res.Outcome)
			}
			res, err := c.Ingest(ctx, TemperatureReading("hall", 20, "°C", at)) // replaces both
			require.NoError(t, err)
			require.Equal(t, Stored, res.Outcome)
			res, err = c.Ingest(ctx, TemperatureReading("hall", 22, "°C", at.Add(time.Second)))
			require.NoError(t, err, "the bucket still parses")
			require.Equal(t, Stored, res.Outcome)

			for _, tier := range []Tier{RawTier, MinuteTier} {
				s, err := c.Aggregate(ctx, Temperature, "hall", minute, minute.Add(time.Minute), time.Minute, tier)
				require.NoError(t, err, tier)
				require.Len(t, s.Buckets, 1, tier)
				b := s.Buckets[0]
				assert.Equal(t, int64(2), b.Count, tier)
				assert.Equal(t, 42.0, b.Sum, tier)
			}
		})
	}
}

// A generic reading whose data "value" is null has no value, on the way
// in and the way out, as the scripts read it: the rollups and the raw
// readings agree that it counts for nothing.
func TestNullDataValueIsNoValue(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			c := newClient(t, e, enc.opts...)
			minute := e.Now().Add(-time.Hour).Truncate(time.Minute)
			at := minute.Add(10 * time.Second)
			res, err := c.Ingest(ctx, Reading{Type: "pressure", Location: "hall", Time: at, Data: json.RawMessage(`{"value":null,"unit":"hPa"}`)})
			require.NoError(t, err)
			require.Equal(t, Stored, res.Outcome)
			cur, err := c.Current(ctx, "pressure", "hall")
			require.NoError(t, err)
			assert.False(t, cur.HasValue, "null is no value")
			for _, tier := range []Tier{RawTier, MinuteTier} {
				s, err := c.Aggregate(ctx, "pressure", "hall", minute, minute.Add(time.Minute), time.Minute, tier)
				require.NoError(t, err, tier)
				assert.Empty(t, s.Buckets, tier)
			}
		})
	}
}

// A generic reading's entity ID for the duplicate policies is its own,
// never an "entity_id" inside its data: two readings without one, at the
// same time, are duplicates whatever their data holds.
func TestDuplicateIgnoresTheDataEntityID(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e, WithDuplicates(FirstWins))
	at := e.Now().Add(-time.Hour).Truncate(time.Millisecond)
	r := Reading{Type: "pressure", Location: "hall", Time: at, Data: json.RawMessage(`{"entity_id":"x","value":1}`)}
	res, err := c.Ingest(ctx, r)
	require.NoError(t, err)
	require.Equal(t, Stored, res.Outcome)
	r.Data = json.RawMessage(`{"entity_id":"x","value":2}`)
	res, err = c.Ingest(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, Duplicate, res.Outcome)
}
