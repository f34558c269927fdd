package sensor

import (
	"context"
	"strconv"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

// Tier is where Aggregate reads: raw readings or a rollup tier.
type Tier uint8

const (
	// AutoTier lets Aggregate pick (the default): the coarsest rollup tier
	// whose bucket divides the requested width and whose retention covers
	// the range, else raw readings.
	AutoTier Tier = iota
	// RawTier aggregates the raw readings (within the raw retention).
	RawTier
	// MinuteTier aggregates the per-minute rollups.
	MinuteTier
	// HourTier aggregates the per-hour rollups.
	HourTier
)

// String names the tier.
func (t Tier) String() string {
	switch t {
	case RawTier:
		return "raw"
	case MinuteTier:
		return "minute"
	case HourTier:
		return "hour"
	}
	return "auto"
}

// Bucket is the aggregate of the values of one bucket: readings with
// Start <= time < Start + width. Readings without a value (a generic
// payload without a numeric "value") are not counted. A motion reading's
// value is 1 for "on" and 0 for "off", so Sum counts the "on" events.
type Bucket struct {
	Start    time.Time
	Count    int64
	Sum      float64
	Min, Max float64
	Avg      float64 // Sum / Count
	First    float64 // the value with the earliest time
	Last     float64 // the value with the latest time
}

// Series is Aggregate's answer: the tier that answered, the bucket width,
// and the buckets that hold readings, by start (empty buckets omitted).
type Series struct {
	Tier    Tier
	Every   time.Duration
	Buckets []Bucket
}

// maxBuckets bounds the buckets of one Aggregate call; maxEvery bounds
// the bucket width.
const (
	maxBuckets = 10000
	maxEvery   = maxRollupRetention
)

// Aggregate returns count, sum, min, max, avg, first and last of typ's
// values in loc per bucket of width every (whole milliseconds, at most
// 400 days), buckets starting at multiples of every since the Unix epoch,
// over the buckets that hold from through to (at most 10,000), in one
// round trip: one script that folds the raw readings or the rollups on
// the server. With AutoTier a week's trend in hours reads at most 168
// hour rollups, never a raw reading. Raw aggregation reading more than
// 200,000 readings is ErrTooMany.
//
// tier picks what is read: AutoTier (the zero value) picks the coarsest
// tier whose bucket divides every and whose retention covers from, else
// the raw readings; another tier makes Aggregate read that one. A tier's
// bucket (a minute, an hour) must divide the width, and the tier must be
// on, else ErrInvalid.
func (c *Client) Aggregate(ctx context.Context, typ, loc string, from, to time.Time, every time.Duration, tier Tier) (Series, error) {
	var s Series
	r, err := c.aggregateRead("aggregate", typ, loc, from, to, every, tier, &s)
	if err != nil {
		return Series{}, err
	}
	if err := c.runOne(ctx, r); err != nil {
		return Series{}, err
	}
	return s, nil
}

// aggregateRead prepares Aggregate into dst.
func (c *Client) aggregateRead(op, typ, loc string, from, to time.Time, every time.Duration, tier Tier, dst *Series) (read, error) {
	w := unit.MsFloor(every)
	switch {
	case every < time.Millisecond || every > maxEvery || every%time.Millisecond != 0:
		return read{}, pkg.Invalidf(op, "bucket width %v outside [1ms, %v] or not whole milliseconds", every, maxEvery)
	case from.After(to):
		return read{}, pkg.Invalidf(op, "from %v after to %v", from, to)
	case tier > HourTier:
		return read{}, pkg.Invalidf(op, "tier %d", tier)
	}
	lo := max(from.UnixMilli(), 0)
	lo -= lo % w
	hi := min(to.UnixMilli(), maxMS)
	hi = hi - hi%w + w - 1
	if (hi+1-lo)/w > maxBuckets {
		return read{}, pkg.Invalidf(op, "%d buckets of %v, at most %d", (hi+1-lo)/w, every, maxBuckets)
	}
	t, err := c.target(op, typ, loc)
	if err != nil {
		return read{}, err
	}
	if tier == AutoTier {
		tier = c.pickTier(lo, w)
	}
	key, kind, keep := t.raw, t.kind, c.opt.retention
	switch tier {
	case MinuteTier:
		key, kind, keep = t.minute, "rollup", c.opt.minute
	case HourTier:
		key, kind, keep = t.hour, "rollup", c.opt.hour
	}
	if kind == "rollup" && (keep == 0 || w%tierSpan(tier) != 0) {
		return read{}, pkg.Invalidf(op, "the %s tier cannot give buckets of %v (off, or not a multiple of its span)", tier, every)
	}
	return read{call: call.Call{Op: aggregateOps[kind], Keys: []string{key}, Args: []any{kind, t.field, lo, hi, w, unit.MsFloor(keep)}},
		done: func(rep *call.Reply, err error) error {
			if err != nil {
				return err
			}
			vals := rep.Strs(0)
			if err := rep.Err(); err != nil {
				return err
			}
			s := Series{Tier: tier, Every: every, Buckets: make([]Bucket, 0, len(vals)/7)}
			for i := 0; i+6 < len(vals); i += 7 {
				var f [7]float64
				for j := range f {
					x, err := strconv.ParseFloat(vals[i+j], 64)
					if err != nil {
						rep.Corruptf(key, "aggregate field %q is not a number", clip(vals[i+j]))
						return rep.Err()
					}
					f[j] = x
				}
				b := Bucket{Start: time.UnixMilli(int64(f[0])).UTC(), Count: int64(f[1]), Sum: f[2], Min: f[3], Max: f[4], First: f[5], Last: f[6]}
				if b.Count > 0 {
					b.Avg = b.Sum / float64(b.Count)
				}
				s.Buckets = append(s.Buckets, b)
			}
			*dst = s
			return nil
		}}, nil
}

func tierSpan(t Tier) int64 {
	if t == HourTier {
		return 3600000
	}
	return 60000
}

// pickTier returns the coarsest tier whose span divides w and whose
// retention covers lo (by the local clock); if none covers lo, the
// dividing tier that keeps the longest; else RawTier.
func (c *Client) pickTier(lo, w int64) Tier {
	now := c.now().UnixMilli()
	best, bestKeep := RawTier, time.Duration(0)
	for _, x := range []struct {
		t    Tier
		keep time.Duration
	}{{HourTier, c.opt.hour}, {MinuteTier, c.opt.minute}} {
		if x.keep == 0 || w%tierSpan(x.t) != 0 {
			continue
		}
		if lo >= now-unit.MsFloor(x.keep) {
			return x.t
		}
		if x.keep > bestKeep {
			best, bestKeep = x.t, x.keep
		}
	}
	if best != RawTier && lo >= now-unit.MsFloor(c.opt.retention) {
		return RawTier
	}
	return best
}
