package sensor

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// Bad options, readings and query arguments fail with ErrInvalid before
// anything is written.
func TestBadInputIsRefusedBeforeWriting(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	for _, opts := range [][]Option{
		{WithRetention(time.Second)},
		{WithRetention(maxRetention + time.Hour)},
		{WithListCap(-1)},
		{WithListCap(maxListCap + 1)},
		{WithRollups(time.Minute, 0)},
		{WithRollups(0, maxRollupRetention+time.Hour)},
		{WithMaxFuture(-time.Second)},
		{WithMaxFuture(maxFuture + time.Second)},
		{WithDuplicates(DuplicatePolicy(9))},
		{WithTypes("Bad Type")},
		{WithLocations("")},
		{WithNamespace(keys.Namespace{Prefix: "{x}"})},
	} {
		_, err := New(e.Client, opts...)
		require.ErrorIs(t, err, ErrInvalid)
	}
	_, err := New(nil)
	require.ErrorIs(t, err, ErrInvalid)

	c := newClient(t, e, WithTypes("pressure"), WithLocations("kitchen", "study"))
	now := e.Now()
	ok := TemperatureReading("kitchen", 20, "°C", now)
	for name, r := range map[string]Reading{
		"empty type":          {Location: "kitchen", Time: now},
		"empty location":      TemperatureReading("", 20, "°C", now),
		"unknown type":        GenericReading("humidity", "kitchen", 1, "", now),
		"unknown location":    TemperatureReading("attic", 20, "°C", now),
		"environmental":       GenericReading("environmental", "kitchen", 1, "", now),
		"upper-case type":     GenericReading("Pressure", "kitchen", 1, "", now),
		"location with colon": TemperatureReading("kit:chen", 20, "°C", now),
		"NaN":                 TemperatureReading("kitchen", math.NaN(), "°C", now),
		"+Inf":                TemperatureReading("kitchen", math.Inf(1), "°C", now),
		"-Inf":                IlluminanceReading("kitchen", math.Inf(-1), "lux", now),
		"huge":                TemperatureReading("kitchen", 1e300, "°C", now),
		"far future":          TemperatureReading("kitchen", 20, "°C", now.Add(time.Hour)),
		"year 1970":           TemperatureReading("kitchen", 20, "°C", time.Unix(5, 0)),
		"zero time":           TemperatureReading("kitchen", 20, "°C", time.Time{}),
		"motion state":        {Type: Motion, Location: "study", Time: now, State: "maybe"},
		"state on a temp":     {Type: Temperature, Location: "kitchen", Time: now, State: On},
		"unit with quote":     TemperatureReading("kitchen", 20, `"C`, now),
		"long unit":           TemperatureReading("kitchen", 20, strings.Repeat("u", maxUnitLen+1), now),
		"bad ID":              {Type: Temperature, Location: "kitchen", Time: now, ID: "a b"},
		"data not an object":  {Type: "pressure", Location: "kitchen", Time: now, Data: json.RawMessage(`[1,2]`)},
		"huge data value":     {Type: "pressure", Location: "kitchen", Time: now, Data: json.RawMessage(`{"value":1e308}`)},
		"data too big":        {Type: "pressure", Location: "kitchen", Time: now, Data: json.RawMessage(`{"x":"` + strings.Repeat("a", maxDataLen) + `"}`)},
		"negative sequence":   {Type: Motion, Location: "study", Time: now, State: On, Sequence: -1},
	} {
		_, err := c.Ingest(ctx, r)
		require.ErrorIs(t, err, ErrInvalid, name)
		_, err = c.IngestBatch(ctx, []Reading{ok, r})
		require.ErrorIs(t, err, ErrInvalid, name)
	}
	for _, k := range e.Keys() { // only the good readings of the batches were written
		require.NoError(t, e.Client.Del(ctx, k).Err())
	}

	// A local clock ahead of the server's passes the local check; the
	// script checks the server's.
	fast := newClient(t, e)
	fast.now = func() time.Time { return e.Now().Add(time.Hour) }
	_, err = fast.Ingest(ctx, TemperatureReading("kitchen", 20, "°C", e.Now().Add(30*time.Minute)))
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "ahead of the server clock")

	_, err = c.IngestBatch(ctx, make([]Reading, maxBatch+1))
	require.ErrorIs(t, err, ErrInvalid)
	for name, q := range map[string]func() error{
		"latest 0":        func() error { _, err := c.Latest(ctx, Temperature, "kitchen", 0); return err },
		"latest too many": func() error { _, err := c.Latest(ctx, Temperature, "kitchen", maxLatest+1); return err },
		"latest no type":  func() error { _, err := c.Latest(ctx, "", "kitchen", 1); return err },
		"range backwards": func() error {
			_, err := c.Range(ctx, Temperature, "kitchen", now, now.Add(-time.Second), 0)
			return err
		},
		"range limit": func() error {
			_, err := c.Range(ctx, Temperature, "kitchen", now, now, maxRangeLimit+1)
			return err
		},
		"aggregate width": func() error { _, err := c.Aggregate(ctx, Temperature, "kitchen", now, now, 0, AutoTier); return err },
		"aggregate buckets": func() error {
			_, err := c.Aggregate(ctx, Temperature, "kitchen", now.Add(-time.Hour), now, time.Millisecond, AutoTier)
			return err
		},
		"aggregate tier": func() error {
			_, err := c.Aggregate(ctx, Temperature, "kitchen", now, now, time.Second, MinuteTier)
			return err
		},
		"motion window":     func() error { _, err := c.MotionWithin(ctx, "study", 0); return err },
		"motion window big": func() error { _, err := c.MotionWithin(ctx, "study", 48*time.Hour); return err },
		"types location":    func() error { _, err := c.Types(ctx, "attic"); return err },
		"since motion":      func() error { _, err := c.SinceMotion(ctx, ""); return err },
	} {
		require.ErrorIs(t, q(), ErrInvalid, name)
	}
	off := newClient(t, e, WithoutRollups())
	_, err = off.Aggregate(ctx, Temperature, "kitchen", now, now, time.Hour, HourTier)
	require.ErrorIs(t, err, ErrInvalid, "a tier that is off")
	assert.Empty(t, e.Keys(), "nothing written")
}
