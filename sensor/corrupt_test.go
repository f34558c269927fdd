package sensor

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Every key pattern of the package, holding a wrong type, garbage or an
// out-of-range value: the operations that read it fail with
// keys.ErrCorrupt naming that exact key (writes before writing anything),
// or repair it as documented.
func TestCorruptionTable(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	seed := newClient(t, e)
	compact := newClient(t, e, WithCompactEncoding())
	now := e.Now().Truncate(time.Millisecond)
	nowMS := float64(now.UnixMilli())
	type plant func(ctx context.Context, k string) error
	str := func(ctx context.Context, k string) error { return e.Client.Set(ctx, k, "x", time.Minute).Err() }
	zadd := func(score float64, member string) plant {
		return func(ctx context.Context, k string) error {
			if err := e.Client.ZAdd(ctx, k, redisZ(score, member)).Err(); err != nil {
				return err
			}
			return e.Client.Expire(ctx, k, time.Minute).Err()
		}
	}
	lpush := func(member string) plant {
		return func(ctx context.Context, k string) error {
			if err := e.Client.LPush(ctx, k, member).Err(); err != nil {
				return err
			}
			return e.Client.Expire(ctx, k, time.Minute).Err()
		}
	}
	hset := func(field, v string) plant {
		return func(ctx context.Context, k string) error {
			if err := e.Client.HSet(ctx, k, field, v).Err(); err != nil {
				return err
			}
			return e.Client.Expire(ctx, k, time.Minute).Err()
		}
	}
	ingest := func(c *Client, r Reading) func(ctx context.Context, loc string) error {
		return func(ctx context.Context, loc string) error {
			r.Location, r.Time = loc, now.Add(-time.Second)
			_, err := c.Ingest(ctx, r)
			return err
		}
	}
	latest := func(c *Client, typ string) func(ctx context.Context, loc string) error {
		return func(ctx context.Context, loc string) error { _, err := c.Latest(ctx, typ, loc, 10); return err }
	}
	rangeOf := func(c *Client, typ string) func(ctx context.Context, loc string) error {
		return func(ctx context.Context, loc string) error {
			_, err := c.Range(ctx, typ, loc, now.Add(-time.Hour), now, 0)
			return err
		}
	}
	agg := func(c *Client, typ string, tier Tier) func(ctx context.Context, loc string) error {
		return func(ctx context.Context, loc string) error {
			_, err := c.Aggregate(ctx, typ, loc, now.Add(-time.Hour), now, time.Hour, tier)
			return err
		}
	}
	sinceMotion := func(ctx context.Context, loc string) error { _, err := seed.SinceMotion(ctx, loc); return err }
	types := func(ctx context.Context, loc string) error { _, err := seed.Types(ctx, loc); return err }
	locations := func(ctx context.Context, _ string) error { _, err := seed.Locations(ctx); return err }
	on := MotionReading("", "m", true, 1, now)
	temp := TemperatureReading("", 20, "°C", now)
	pres := GenericReading("pressure", "", 1000, "hPa", now)
	bucket := float64(now.Add(-time.Second).UnixMilli() / 60000 * 60000)
	hourBucket := float64(now.Add(-time.Second).UnixMilli() / 3600000 * 3600000)

	type op = func(ctx context.Context, loc string) error
	for i, tc := range []struct {
		name    string
		key     *keys.Template
		args    func(loc string) []string
		plant   plant
		ops     []op
		corrupt bool // else: the ops succeed (documented repair)
	}{
		{"motion: wrong type", motionKey, locOnly, str, []op{ingest(seed, on), latest(seed, Motion)}, true},
		{"motion: garbage member", motionKey, locOnly, zadd(nowMS-1000, "junk"), []op{latest(seed, Motion), rangeOf(seed, Motion), agg(seed, Motion, RawTier)}, true},
		{"motion: JSON without state", motionKey, locOnly, zadd(nowMS-1000, `{"timestamp":"2025-01-01T12:00:00.000Z"}`), []op{latest(seed, Motion)}, true},
		{"motion meta: wrong type", motionMetaKey, locOnly, str, []op{ingest(seed, on), sinceMotion}, true},
		{"motion meta: garbage", motionMetaKey, locOnly, hset("lastMotionTime", "soon"), []op{ingest(seed, on), sinceMotion, ingest(compact, on)}, true},
		{"motion meta: negative", motionMetaKey, locOnly, hset("lastMotionTime", "-5"), []op{sinceMotion}, true},
		{"environmental: wrong type", envKey, locOnly, str, []op{ingest(seed, temp), latest(seed, Temperature)}, true},
		{"environmental: garbage member", envKey, locOnly, zadd(nowMS-1000, "junk"), []op{latest(seed, Temperature), agg(seed, Temperature, RawTier)}, true},
		{"environmental: value not a number", envKey, locOnly, zadd(nowMS-1000, `{"timestamp":"2025-01-01T12:00:00.000Z","temperature":"hot"}`), []op{latest(seed, Temperature), agg(seed, Temperature, RawTier)}, true},
		{"generic: wrong type", genericKey, typeLoc, str, []op{ingest(seed, pres), latest(seed, "pressure")}, true},
		{"generic: garbage member", genericKey, typeLoc, lpush("junk"), []op{ingest(seed, pres), latest(seed, "pressure"), rangeOf(seed, "pressure")}, true},
		{"generic: far-off timestamp", genericKey, typeLoc, lpush(`{"data":{},"timestamp":"2025-13-01T00:00:00Z"}`), []op{latest(seed, "pressure")}, true},
		{"generic meta: wrong type", genericMetaKey, typeLoc, str, []op{ingest(seed, pres)}, true},
		{"generic meta: garbage is overwritten", genericMetaKey, typeLoc, hset("last_update", "never"), []op{ingest(seed, pres)}, false},
		{"types index: wrong type", typesKey, locOnly, str, []op{ingest(seed, temp), types}, true},
		{"types index: bad name", typesKey, locOnly, zadd(nowMS, "Not A Type!"), []op{types}, true},
		{"types index: score out of range", typesKey, locOnly, zadd(1e300, Temperature), []op{ingest(seed, temp)}, true},
		{"locations index: wrong type", locationsKey, none, str, []op{locations}, true},
		{"locations index: bad name", locationsKey, none, zadd(nowMS, "a:b"), []op{locations}, true},
		{"minute tier: wrong type", minuteKey, typeLoc2(Temperature), str, []op{ingest(seed, temp), agg(seed, Temperature, MinuteTier)}, true},
		{"minute tier: garbage bucket", minuteKey, typeLoc2(Temperature), zadd(bucket, "junk"), []op{ingest(seed, temp), agg(seed, Temperature, MinuteTier)}, true},
		{"minute tier: negative count", minuteKey, typeLoc2(Temperature), zadd(bucket, strconv.FormatFloat(bucket, 'f', 0, 64)+":-1:0:0:0:0:0:0:0"), []op{ingest(seed, temp)}, true},
		{"hour tier: garbage bucket", hourKey, typeLoc2(Temperature), zadd(hourBucket, "junk"), []op{ingest(seed, temp), agg(seed, Temperature, HourTier)}, true},
		{"compact: wrong type", compactKey, typeLoc2(Temperature), str, []op{ingest(compact, temp), latest(compact, Temperature)}, true},
		{"compact: garbage chunk", compactKey, typeLoc2(Temperature), zadd(nowMS-5000, "junk"), []op{ingest(compact, temp), latest(compact, Temperature), rangeOf(compact, Temperature)}, true},
		{"compact: bad entry", compactKey, typeLoc2(Motion), zadd(nowMS-5000, strconv.FormatFloat(nowMS-5000, 'f', 0, 64)+"||m;0,7,abc"), []op{latest(compact, Motion)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for j, o := range tc.ops {
				loc := "c" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
				k, err := tc.key.Key(e.NS, tc.args(loc)...)
				require.NoError(t, err)
				require.NoError(t, tc.plant(ctx, k))
				before := e.Client.Dump(ctx, k).Val()
				err = o(ctx, loc)
				if !tc.corrupt {
					require.NoError(t, err, "op %d", j)
					continue
				}
				require.ErrorIs(t, err, keys.ErrCorrupt, "op %d", j)
				var ce *keys.CorruptError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, k, ce.Key, "op %d: the error names the key at fault", j)
				assert.Contains(t, err.Error(), k)
				assert.Equal(t, before, e.Client.Dump(ctx, k).Val(), "op %d: the key is left as it was", j)
				require.NoError(t, e.Client.Del(ctx, k).Err())
			}
		})
	}
}

func locOnly(loc string) []string { return []string{loc} }
func none(string) []string        { return nil }
func typeLoc(loc string) []string { return []string{"pressure", loc} }
func typeLoc2(typ string) func(string) []string {
	return func(loc string) []string { return []string{typ, loc} }
}
