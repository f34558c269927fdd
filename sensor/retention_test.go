package sensor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// encodings runs a test with seed 003's encoding and the compact one.
var encodings = []struct {
	name string
	opts []Option
}{{"seed", nil}, {"compact", []Option{WithCompactEncoding()}}}

// A reading is kept while its time is at or after now - retention (the
// seed's ZREMRANGEBYSCORE -inf (now-86400000): exact to the millisecond,
// in queries and in what the writes trim.
func TestRetentionExactAtTheBoundary(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			c := newClient(t, e, enc.opts...)
			if e.Mini != nil {
				// Frozen clock: the boundary itself.
				now := e.Now()
				edge := TemperatureReading("hall", 20, "°C", now.Add(-defaultRetention))
				res, err := c.Ingest(ctx, edge)
				require.NoError(t, err)
				assert.Equal(t, Stored, res.Outcome, "exactly 24 h old is inside")
				res, err = c.Ingest(ctx, TemperatureReading("hall", 21, "°C", now.Add(-defaultRetention-time.Millisecond)))
				require.NoError(t, err)
				assert.Equal(t, Late, res.Outcome, "1 ms older is outside")
				rs, err := c.Latest(ctx, Temperature, "hall", 10)
				require.NoError(t, err)
				require.Len(t, rs, 1)
				assert.Equal(t, 20.0, rs[0].Value)

				e.Advance(time.Millisecond)
				rs, err = c.Latest(ctx, Temperature, "hall", 10)
				require.NoError(t, err)
				assert.Empty(t, rs, "a millisecond later it is gone from the queries")
				_, err = c.Ingest(ctx, TemperatureReading("hall", 22, "°C", e.Now()))
				require.NoError(t, err)
				rs, err = c.Range(ctx, Temperature, "hall", time.Time{}, e.Now(), 0)
				require.NoError(t, err)
				require.Len(t, rs, 1, "and the next write trimmed it")
				if len(enc.opts) == 0 {
					assert.Equal(t, int64(1), e.Client.ZCard(ctx, c.mustTarget(t, Temperature, "hall").raw).Val())
				}
				return
			}
			// A real server: a reading 700 ms inside the window, then
			// outside it a second later.
			now := e.Now()
			_, err := c.Ingest(ctx, TemperatureReading("hall", 20, "°C", now.Add(-defaultRetention+700*time.Millisecond)))
			require.NoError(t, err)
			rs, err := c.Latest(ctx, Temperature, "hall", 10)
			require.NoError(t, err)
			require.Len(t, rs, 1)
			time.Sleep(time.Second)
			rs, err = c.Latest(ctx, Temperature, "hall", 10)
			require.NoError(t, err)
			assert.Empty(t, rs)
			_, err = c.Ingest(ctx, TemperatureReading("hall", 22, "°C", e.Now()))
			require.NoError(t, err)
			rs, err = c.Range(ctx, Temperature, "hall", time.Time{}, e.Now().Add(time.Second), 0)
			require.NoError(t, err)
			assert.Len(t, rs, 1)
		})
	}
}

func (c *Client) mustTarget(t testing.TB, typ, loc string) target {
	tg, err := c.target("test", typ, loc)
	require.NoError(t, err)
	return tg
}

// Every key a write touches expires 24 h after its newest reading (the
// seed's TTL), and a later write of an older reading never shortens it.
func TestTTLsFollowTheNewestReading(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	now := e.Now()
	_, err := c.Ingest(ctx, MotionReading("study", "m", true, 1, now.Add(2*time.Minute)))
	require.NoError(t, err)
	_, err = c.Ingest(ctx, MotionReading("study", "m", true, 2, now.Add(-time.Hour)))
	require.NoError(t, err)
	tg := c.mustTarget(t, Motion, "study")
	for _, k := range []string{tg.raw, tg.meta, tg.types, tg.minute, tg.hour} {
		ttl := e.Client.PTTL(ctx, k).Val()
		assert.Greater(t, ttl, time.Minute, k)
	}
	for _, k := range []string{tg.raw, tg.meta, tg.types} {
		ttl := e.Client.PTTL(ctx, k).Val()
		assert.InDelta(t, float64(defaultRetention+2*time.Minute), float64(ttl), float64(2*time.Second), k)
	}
	e.RequireTTLs(nil)
}

// The generic list is never longer than its cap, newest first.
func TestListNeverLongerThanItsCap(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e, WithListCap(5))
	tg := c.mustTarget(t, "pressure", "kitchen")
	base := e.Now().Add(-time.Hour)
	for i := range 20 {
		_, err := c.Ingest(ctx, GenericReading("pressure", "kitchen", float64(1000+i), "hPa", base.Add(time.Duration(i)*time.Second)))
		require.NoError(t, err)
		assert.LessOrEqual(t, e.Client.LLen(ctx, tg.raw).Val(), int64(5))
	}
	rs, err := c.Latest(ctx, "pressure", "kitchen", 10)
	require.NoError(t, err)
	require.Len(t, rs, 5)
	for i, r := range rs {
		assert.Equal(t, float64(1019-i), r.Value)
	}
	// Readings also leave the list once older than the retention.
	e.RequireShortWaits(0)
	if e.Mini != nil {
		e.Advance(defaultRetention - 30*time.Minute)
		_, err = c.Ingest(ctx, GenericReading("pressure", "kitchen", 1, "hPa", e.Now()))
		require.NoError(t, err)
		assert.Equal(t, int64(1), e.Client.LLen(ctx, tg.raw).Val(), "the hour-old readings went when they left the retention")
	}
}

// meta:motion:{location} lastMotionTime moves only on "on", and only
// forward.
func TestLastMotionTimeMovesOnlyOnOn(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	tg := c.mustTarget(t, Motion, "study")
	now := e.Now().Truncate(time.Millisecond)
	last := func() string { return e.Client.HGet(ctx, tg.meta, "lastMotionTime").Val() }

	_, err := c.Ingest(ctx, MotionReading("study", "m", false, 1, now.Add(-10*time.Minute)))
	require.NoError(t, err)
	assert.Zero(t, e.Client.Exists(ctx, tg.meta).Val(), "an off event writes no meta")
	_, err = c.SinceMotion(ctx, "study")
	require.ErrorIs(t, err, ErrNotFound)

	t1 := now.Add(-5 * time.Minute)
	_, err = c.Ingest(ctx, MotionReading("study", "m", true, 2, t1))
	require.NoError(t, err)
	assert.Equal(t, itoa(t1.UnixMilli()), last())
	_, err = c.Ingest(ctx, MotionReading("study", "m", false, 3, now.Add(-4*time.Minute)))
	require.NoError(t, err)
	assert.Equal(t, itoa(t1.UnixMilli()), last(), "off leaves it")
	_, err = c.Ingest(ctx, MotionReading("study", "m", true, 4, now.Add(-20*time.Minute)))
	require.NoError(t, err)
	assert.Equal(t, itoa(t1.UnixMilli()), last(), "a late on leaves it")

	since, err := c.SinceMotion(ctx, "study")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, since, 5*time.Minute)
	assert.Less(t, since, 6*time.Minute)
	in, err := c.MotionWithin(ctx, "study", 10*time.Minute)
	require.NoError(t, err)
	assert.True(t, in)
	in, err = c.MotionWithin(ctx, "study", 5*time.Minute)
	require.NoError(t, err)
	assert.False(t, in, "exclusive, like the seed's (now-300000")
	in, err = c.MotionWithin(ctx, "elsewhere", 10*time.Minute)
	require.NoError(t, err)
	assert.False(t, in)
}
