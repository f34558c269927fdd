package sensor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// Latest, Current, Range and Since, for each family and encoding: the
// environmental types kept apart in their shared key, times exact to the
// millisecond, readings typed on the way out.
func TestQueries(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			c := newClient(t, e, enc.opts...)
			base := e.Now().Add(-time.Hour).Truncate(time.Millisecond)
			var batch []Reading
			for i := range 30 {
				at := base.Add(time.Duration(i) * time.Minute)
				batch = append(batch,
					TemperatureReading("living_room", 20+float64(i)/10, "°C", at),
					IlluminanceReading("living_room", float64(100*i), "lux", at.Add(time.Second)),
					MotionReading("living_room", "binary_sensor.motion_lr", i%2 == 0, int64(i), at),
					GenericReading("pressure", "living_room", 1000+float64(i), "hPa", at))
			}
			res, err := c.IngestBatch(ctx, batch)
			require.NoError(t, err)
			for _, r := range res {
				require.Equal(t, Stored, r.Outcome)
			}

			cur, err := c.Current(ctx, Temperature, "living_room")
			require.NoError(t, err)
			assert.Equal(t, 22.9, cur.Value)
			assert.Equal(t, "°C", cur.Unit)
			assert.Equal(t, base.Add(29*time.Minute).UTC(), cur.Time)
			cur, err = c.Current(ctx, Illuminance, "living_room")
			require.NoError(t, err)
			assert.Equal(t, 2900.0, cur.Value)
			assert.Equal(t, "lux", cur.Unit)
			_, err = c.Current(ctx, Temperature, "attic")
			require.ErrorIs(t, err, ErrNotFound)

			for _, typ := range []string{Temperature, Illuminance, Motion, "pressure"} {
				rs, err := c.Latest(ctx, typ, "living_room", 5)
				require.NoError(t, err, typ)
				require.Len(t, rs, 5, typ)
				for i := 1; i < len(rs); i++ {
					assert.True(t, rs[i-1].Time.After(rs[i].Time), "%s: newest first", typ)
				}
				for _, r := range rs {
					assert.Equal(t, typ, r.Type)
					assert.Equal(t, "living_room", r.Location)
					assert.NotEmpty(t, r.ID)
				}
				from, to := base.Add(10*time.Minute), base.Add(19*time.Minute+time.Second)
				rs, err = c.Range(ctx, typ, "living_room", from, to, 0)
				require.NoError(t, err, typ)
				assert.Len(t, rs, 10, "%s: [from, to] inclusive", typ)
				for i := 1; i < len(rs); i++ {
					assert.True(t, rs[i-1].Time.Before(rs[i].Time), "%s: oldest first", typ)
				}
				rs, err = c.Since(ctx, typ, "living_room", base.Add(25*time.Minute), 0)
				require.NoError(t, err)
				assert.Len(t, rs, 5, typ)
				rs, err = c.Range(ctx, typ, "living_room", base, base.Add(time.Hour), 7)
				require.ErrorIs(t, err, ErrTruncated)
				assert.Len(t, rs, 7)
			}
			m, err := c.Latest(ctx, Motion, "living_room", 1)
			require.NoError(t, err)
			assert.Equal(t, Off, m[0].State, "i = 29 is odd")
			assert.Equal(t, 0.0, m[0].Value)
			assert.Equal(t, "binary_sensor.motion_lr", m[0].EntityID)
			p, err := c.Current(ctx, "pressure", "living_room")
			require.NoError(t, err)
			assert.Equal(t, 1029.0, p.Value)
			assert.True(t, p.HasValue)
			assert.Equal(t, "hPa", p.Unit)
		})
	}
}

// Two readings with identical content are two members (the seed stored
// one), and the duplicate policies decide what a second reading of the
// same sensor at the same time does.
func TestDuplicatesAndIdenticalReadings(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			at := e.Now().Add(-time.Minute).Truncate(time.Millisecond)
			for _, tc := range []struct {
				policy DuplicatePolicy
				second Outcome
				want   []float64 // the stored values, oldest first
				count  int64     // the minute rollup's count
				sum    float64
			}{
				{KeepBoth, Stored, []float64{21, 22}, 2, 43},
				{LastWins, Stored, []float64{22}, 1, 22},
				{FirstWins, Duplicate, []float64{21}, 1, 21},
			} {
				c := newClient(t, e, append([]Option{WithDuplicates(tc.policy)}, enc.opts...)...)
				loc := "room-" + tc.policy.arg()
				for _, typ := range []string{Temperature, "humidity"} {
					r1 := GenericReading(typ, loc, 21, "x", at)
					r2 := GenericReading(typ, loc, 22, "x", at)
					res, err := c.Ingest(ctx, r1)
					require.NoError(t, err)
					require.Equal(t, Stored, res.Outcome)
					res, err = c.Ingest(ctx, r2)
					require.NoError(t, err)
					assert.Equal(t, tc.second, res.Outcome, "%s %s", typ, tc.policy.arg())
					rs, err := c.Range(ctx, typ, loc, at, at, 0)
					require.NoError(t, err)
					var got []float64
					for _, r := range rs {
						got = append(got, r.Value)
					}
					assert.Equal(t, tc.want, got, "%s %s", typ, tc.policy.arg())
					s, err := c.Aggregate(ctx, typ, loc, at, at, time.Minute, MinuteTier)
					require.NoError(t, err)
					require.Len(t, s.Buckets, 1)
					assert.Equal(t, tc.count, s.Buckets[0].Count)
					assert.Equal(t, tc.sum, s.Buckets[0].Sum)
				}
			}
			// Identical readings (same content, same time) under KeepBoth.
			c := newClient(t, e, enc.opts...)
			same := TemperatureReading("twins", 20, "°C", at)
			same.CollectedAt = at
			for range 3 {
				_, err := c.Ingest(ctx, same)
				require.NoError(t, err)
			}
			rs, err := c.Latest(ctx, Temperature, "twins", 10)
			require.NoError(t, err)
			assert.Len(t, rs, 3, "three readings, three members")
		})
	}
}

// Generic payloads keep their fields, and a payload without a numeric
// value is stored but not aggregated.
func TestGenericPayloads(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	at := e.Now().Add(-time.Minute)
	r := Reading{Type: "door", Location: "hall", Time: at, Data: json.RawMessage(`{"open": true, "by": "cat"}`), Topic: "automation/raw/door/hall"}
	_, err := c.Ingest(ctx, r)
	require.NoError(t, err)
	got, err := c.Current(ctx, "door", "hall")
	require.NoError(t, err)
	assert.JSONEq(t, `{"open":true,"by":"cat"}`, string(got.Data))
	assert.False(t, got.HasValue)
	assert.Equal(t, "automation/raw/door/hall", got.Topic)
	s, err := c.Aggregate(ctx, "door", "hall", at, at, time.Minute, RawTier)
	require.NoError(t, err)
	assert.Empty(t, s.Buckets)

	// What the scripts aggregate is the value read back: the top-level
	// "value" when it is a number (the last of repeated ones), never a
	// nested, quoted or escaped one.
	for typ, tc := range map[string]struct {
		data string
		want float64 // 0: no value
	}{
		"gauge":    {`{"calibration":{"offset":1},"value":7,"label":"high"}`, 7},
		"level":    {`{"value":"high"}`, 0},
		"nested":   {`{"calibration":{"value":5},"value":7}`, 7},
		"inner":    {`{"calibration":{"value":5}}`, 0},
		"quoted":   {`{"x \"value": 5}`, 0},
		"keyed":    {`{"value":7,"x \"value": 5}`, 7},
		"reversed": {`{"unit":"hPa","value":7}`, 7},
		"repeated": {`{"value":5,"value":7}`, 7},
		"escaped":  {`{"value":5,"\u0076alue":7}`, 7},
	} {
		_, err := c.Ingest(ctx, Reading{Type: typ, Location: "hall", Time: at, Data: json.RawMessage(tc.data)})
		require.NoError(t, err, typ)
		got, err := c.Current(ctx, typ, "hall")
		require.NoError(t, err)
		s, err := c.Aggregate(ctx, typ, "hall", at, at, time.Minute, RawTier)
		require.NoError(t, err)
		if tc.want == 0 {
			assert.False(t, got.HasValue, typ)
			assert.Empty(t, s.Buckets, typ)
			continue
		}
		assert.Equal(t, tc.want, got.Value, typ)
		require.Len(t, s.Buckets, 1, typ)
		assert.Equal(t, tc.want, s.Buckets[0].Max, typ)
	}
}

// A reading older than the newest, arriving when the newest compact
// chunk is full, joins the chunk of its time: a chunk never starts before
// readings that an earlier chunk holds, so the queries still see every
// reading in order (the seed encoding, which has no chunks, alike).
func TestLateReadingIntoAFullChunk(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			c := newClient(t, e, enc.opts...)
			base := e.Now().Add(-time.Hour).Truncate(time.Millisecond)
			at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
			for i := range 64 { // one full chunk
				res, err := c.Ingest(ctx, TemperatureReading("hall", float64(i), "°C", at(10*i)))
				require.NoError(t, err)
				require.Equal(t, Stored, res.Outcome)
			}
			res, err := c.Ingest(ctx, TemperatureReading("hall", 99, "°C", at(305)))
			require.NoError(t, err)
			require.Equal(t, Stored, res.Outcome)

			cur, err := c.Current(ctx, Temperature, "hall")
			require.NoError(t, err)
			assert.Equal(t, at(630).UTC(), cur.Time, "the newest reading, not the late one")
			rs, err := c.Range(ctx, Temperature, "hall", at(310), at(1000), 100)
			require.NoError(t, err)
			assert.Len(t, rs, 33, "310 ms to 630 ms")
			rs, err = c.Range(ctx, Temperature, "hall", at(0), at(1000), 100)
			require.NoError(t, err)
			require.Len(t, rs, 65)
			for i := 1; i < len(rs); i++ {
				assert.False(t, rs[i].Time.Before(rs[i-1].Time), "in time order")
			}
			assert.Equal(t, 99.0, rs[31].Value, "the late reading in its place")
		})
	}
}
