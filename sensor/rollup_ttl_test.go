package sensor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// A rollup key that holds one bucket keeps its TTL when a second reading
// updates that bucket (issue 33, defect 1: the update removed the only
// member, so Redis deleted the key, and re-added it without a TTL). Each
// case updates the only bucket of both tiers through one write path:
// the fast path, the general script (a second reading at the same
// millisecond), the generic list, the compact encoding, and LastWins
// replacing a reading by an identical one (the bucket's member does not
// change).
func TestRollupKeepsTTLWhenItsOnlyBucketIsUpdated(t *testing.T) {
	cases := []struct {
		name   string
		opts   []Option
		typ    string
		second time.Duration // the second reading's time after the first
		value2 float64
	}{
		{"fast path", nil, Temperature, 3 * time.Millisecond, 21},
		{"motion fast path", nil, Motion, 3 * time.Millisecond, 0},
		{"general script", nil, Temperature, 0, 21},
		{"generic list", nil, "pressure", 3 * time.Millisecond, 1014},
		{"compact", []Option{WithCompactEncoding()}, Temperature, 3 * time.Millisecond, 21},
		{"last wins, same value", []Option{WithDuplicates(LastWins)}, Temperature, 0, 20},
		{"last wins, compact", []Option{WithDuplicates(LastWins), WithCompactEncoding()}, "pressure", 0, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			c := newClient(t, e, tc.opts...)
			// Both readings in one minute (so in one hour), off whole
			// seconds (miniredis prints a round score with an exponent).
			first := e.Now().Truncate(time.Minute).Add(1234 * time.Millisecond)
			reading := func(v float64, at time.Time) Reading {
				switch tc.typ {
				case Temperature:
					return TemperatureReading("a", v, "°C", at)
				case Motion:
					return MotionReading("a", "binary_sensor.motion_a", v != 0, int64(v), at)
				}
				return GenericReading(tc.typ, "a", v, "hPa", at)
			}
			v1 := 20.0
			if tc.typ == Motion {
				v1 = 1
			}
			tg := c.mustTarget(t, tc.typ, "a")
			_, err := c.Ingest(ctx, reading(v1, first))
			require.NoError(t, err)
			for _, k := range []string{tg.minute, tg.hour} {
				require.Equal(t, int64(1), e.Client.ZCard(ctx, k).Val(), "one bucket in %s", k)
			}
			res, err := c.Ingest(ctx, reading(tc.value2, first.Add(tc.second)))
			require.NoError(t, err)
			require.Equal(t, Stored, res.Outcome)

			for _, k := range []string{tg.minute, tg.hour} {
				ms := e.Client.ZRange(ctx, k, 0, -1).Val()
				require.Len(t, ms, 1, "still one bucket in %s", k)
				count := strings.Split(ms[0], ":")[1]
				if c.opt.dup == LastWins {
					assert.Equal(t, "1", count, "%s: the replaced reading counts once", k)
				} else {
					assert.Equal(t, "2", count, "%s: both readings counted", k)
				}
				ttl := e.Client.PTTL(ctx, k).Val()
				assert.Greater(t, ttl, time.Duration(0), "%s has a TTL", k)
			}
			e.RequireTTLs(nil)
		})
	}
}
