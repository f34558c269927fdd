package sensor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// What a reading does not say is left out of its stored JSON (issue 33,
// defect 13: a bare "21.75" was stored with "temperature_unit":"" and a
// bare "off" with "entity_id":"","sequence":0), and members that hold
// those empty fields, as earlier versions wrote them, still read back
// and still meet their duplicates.
func TestUnknownFieldsLeftOutOfMembers(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	at := e.Now().Truncate(time.Millisecond).Add(-time.Second)
	ts, ms := at.UTC().Format("2006-01-02T15:04:05.000Z"), itoa(at.UnixMilli())

	for _, r := range []Reading{
		TemperatureReading("hall", 21.75, "", at),
		IlluminanceReading("hall", 300, "", at),
		MotionReading("hall", "", false, 0, at),
		GenericReading("pressure", "hall", 1013, "", at),
	} {
		r.CollectedAt, r.ID = at, "r-"+r.Type
		_, err := c.Ingest(ctx, r)
		require.NoError(t, err)
	}
	assert.ElementsMatch(t, []string{
		`{"timestamp":"` + ts + `","collected_at":` + ms + `,"temperature":21.75,"id":"r-temperature"}`,
		`{"timestamp":"` + ts + `","collected_at":` + ms + `,"illuminance":300,"id":"r-illuminance"}`,
	}, e.Client.ZRange(ctx, c.mustTarget(t, Temperature, "hall").raw, 0, -1).Val())
	assert.Equal(t, []string{`{"timestamp":"` + ts + `","state":"off","collected_at":` + ms + `,"id":"r-motion"}`},
		e.Client.ZRange(ctx, c.mustTarget(t, Motion, "hall").raw, 0, -1).Val())
	assert.Equal(t, []string{`{"data":{"value":1013},"timestamp":"` + ts + `","collected_at":` + ms + `,"id":"r-pressure"}`},
		e.Client.LRange(ctx, c.mustTarget(t, "pressure", "hall").raw, 0, -1).Val())
}

// Members with the empty fields earlier versions wrote read back as
// before, and a LastWins write still finds them as the same sensor's
// reading at that time.
func TestUnknownFieldsReadBack(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e, WithDuplicates(LastWins))
	at := e.Now().Truncate(time.Millisecond).Add(-time.Second)
	ts, ms := at.UTC().Format("2006-01-02T15:04:05.000Z"), itoa(at.UnixMilli())
	env := c.mustTarget(t, Temperature, "hall")
	mot := c.mustTarget(t, Motion, "hall")
	gen := c.mustTarget(t, "pressure", "hall")
	require.NoError(t, e.Client.ZAdd(ctx, env.raw, redisZ(float64(at.UnixMilli()),
		`{"timestamp":"`+ts+`","collected_at":`+ms+`,"temperature":21.75,"temperature_unit":"","id":"old-t"}`)).Err())
	require.NoError(t, e.Client.ZAdd(ctx, mot.raw, redisZ(float64(at.UnixMilli()),
		`{"timestamp":"`+ts+`","state":"off","entity_id":"","sequence":0,"collected_at":`+ms+`,"id":"old-m"}`)).Err())
	require.NoError(t, e.Client.LPush(ctx, gen.raw,
		`{"data":{"value":1013},"original_topic":"","timestamp":"`+ts+`","collected_at":`+ms+`,"id":"old-p"}`).Err())

	want := map[string]Reading{
		Temperature: {Type: Temperature, Location: "hall", Time: at.UTC(), Value: 21.75, HasValue: true, CollectedAt: at.UTC(), ID: "old-t"},
		Motion:      {Type: Motion, Location: "hall", Time: at.UTC(), State: Off, HasValue: true, CollectedAt: at.UTC(), ID: "old-m"},
		"pressure":  {Type: "pressure", Location: "hall", Time: at.UTC(), Value: 1013, HasValue: true, Data: []byte(`{"value":1013}`), CollectedAt: at.UTC(), ID: "old-p"},
	}
	for typ, w := range want {
		got, err := c.Current(ctx, typ, "hall")
		require.NoError(t, err, typ)
		assert.Equal(t, w, got, typ)
	}

	for _, r := range []Reading{
		TemperatureReading("hall", 22, "", at),
		MotionReading("hall", "", true, 0, at),
		GenericReading("pressure", "hall", 1014, "", at),
	} {
		res, err := c.Ingest(ctx, r)
		require.NoError(t, err)
		require.Equal(t, Stored, res.Outcome)
		rs, err := c.Latest(ctx, r.Type, "hall", 10)
		require.NoError(t, err)
		require.Len(t, rs, 1, "%s: the new reading replaced the old one (LastWins)", r.Type)
		assert.Equal(t, r.Value, rs[0].Value, r.Type)
	}
}
