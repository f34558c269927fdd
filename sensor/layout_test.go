package sensor

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// With hash tags off, every key is seed 003's, byte for byte, and each
// member is the seed's JSON with the reading's ID appended.
func TestSeedLayoutByteForByte(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Cluster {
		t.Skip("keys without hash tags are not co-located on a cluster; the tagged layout runs there")
	}
	ctx := e.Ctx()
	ns := keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}
	c, err := New(e.Client, WithNamespace(ns))
	require.NoError(t, err)
	followServerClock(e, c)
	now := e.Now().Truncate(time.Millisecond)
	at := now.Add(-time.Second)
	col := now

	m := MotionReading("study", "binary_sensor.motion_study", true, 42, at)
	m.CollectedAt, m.ID = col, "r1"
	tr := TemperatureReading("living_room", 22.5, "°C", at)
	tr.CollectedAt, tr.ID = col, "r2"
	il := IlluminanceReading("living_room", 450, "lux", at.Add(456*time.Millisecond))
	il.CollectedAt, il.ID = col, "r3"
	p := Reading{Type: "pressure", Location: "kitchen", Time: at, Data: json.RawMessage(`{"value": 1013.25, "unit": "hPa", "trend": "stable"}`),
		Topic: "automation/raw/pressure/kitchen", CollectedAt: col, ID: "r4"}
	for _, r := range []Reading{m, tr, il, p} {
		res, err := c.Ingest(ctx, r)
		require.NoError(t, err)
		assert.Equal(t, Stored, res.Outcome)
	}
	pre := e.NS.Prefix
	ts := at.UTC().Format("2006-01-02T15:04:05.000Z")
	ms := at.UnixMilli()
	cms := col.UnixMilli()

	z, err := e.Client.ZRangeWithScores(ctx, pre+"sensor:motion:study", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, z, 1)
	assert.Equal(t, float64(ms), z[0].Score)
	assert.Equal(t, `{"timestamp":"`+ts+`","state":"on","entity_id":"binary_sensor.motion_study","sequence":42,"collected_at":`+itoa(cms)+`,"id":"r1"}`, z[0].Member)
	assert.Equal(t, map[string]string{"lastMotionTime": itoa(ms)}, e.Client.HGetAll(ctx, pre+"meta:motion:study").Val())

	z, err = e.Client.ZRangeWithScores(ctx, pre+"sensor:environmental:living_room", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, z, 2)
	assert.Equal(t, `{"timestamp":"`+ts+`","collected_at":`+itoa(cms)+`,"temperature":22.5,"temperature_unit":"°C","id":"r2"}`, z[0].Member)
	assert.Equal(t, `{"timestamp":"`+at.Add(456*time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z")+`","collected_at":`+itoa(cms)+`,"illuminance":450,"illuminance_unit":"lux","id":"r3"}`, z[1].Member)

	l, err := e.Client.LRange(ctx, pre+"sensor:pressure:kitchen", 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{`{"data":{"value":1013.25,"unit":"hPa","trend":"stable"},"original_topic":"automation/raw/pressure/kitchen","timestamp":"` + ts + `","collected_at":` + itoa(cms) + `,"id":"r4"}`}, l)
	meta := e.Client.HGetAll(ctx, pre+"meta:pressure:kitchen").Val()
	assert.Equal(t, "pressure", meta["sensor_type"])
	assert.Equal(t, "kitchen", meta["location"])
	lu, err := strconv.ParseInt(meta["last_update"], 10, 64)
	require.NoError(t, err, "last_update is Unix ms")
	assert.GreaterOrEqual(t, lu, now.UnixMilli(), "the server clock at the write")
	assert.LessOrEqual(t, lu, e.Now().UnixMilli())

	for _, k := range []string{"sensor:motion:study", "meta:motion:study", "sensor:environmental:living_room", "sensor:pressure:kitchen", "meta:pressure:kitchen"} {
		ttl := e.Client.PTTL(ctx, pre+k).Val()
		assert.Equal(t, 24*time.Hour, ttl.Round(time.Second), "%s: the seed's 24 h TTL", k)
	}

	// A seed reader keeps working: it decodes our members into its own
	// types and ignores the ID.
	var seedMotion struct {
		Timestamp   string `json:"timestamp"`
		State       string `json:"state"`
		EntityID    string `json:"entity_id"`
		Sequence    int    `json:"sequence"`
		CollectedAt int64  `json:"collected_at"`
	}
	mem := e.Client.ZRange(ctx, pre+"sensor:motion:study", 0, 0).Val()[0]
	require.NoError(t, json.Unmarshal([]byte(mem), &seedMotion))
	assert.Equal(t, "on", seedMotion.State)
	assert.Equal(t, 42, seedMotion.Sequence)

	// And our reader reads the seed's own members, without IDs.
	seed := `{"timestamp":"` + ts + `","collected_at":` + itoa(cms) + `,"temperature":21,"temperature_unit":"°C"}`
	require.NoError(t, e.Client.ZAdd(ctx, pre+"sensor:environmental:hall", redisZ(float64(ms), seed)).Err())
	got, err := c.Current(ctx, Temperature, "hall")
	require.NoError(t, err)
	assert.Equal(t, 21.0, got.Value)
	assert.Equal(t, "°C", got.Unit)
	assert.Equal(t, at.UTC(), got.Time)
	assert.Empty(t, got.ID)
}

// With tags on (the default), the location is the hash tag of every key
// a write touches, so one reading's keys share a slot.
func TestKeysShareTheLocationSlot(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	for _, typ := range []string{Motion, Temperature, "pressure"} {
		tg, err := c.target("test", typ, "living_room")
		require.NoError(t, err)
		w, err := c.write("test", GenericReading(typ, "living_room", 1, "", e.Now()), e.Now())
		if typ == Motion {
			w, err = c.write("test", MotionReading("living_room", "x", true, 1, e.Now()), e.Now())
		}
		require.NoError(t, err)
		for _, k := range w.call.Keys {
			assert.Equal(t, keys.Slot(tg.raw), keys.Slot(k), k)
			assert.Contains(t, k, "{living_room}")
		}
	}
}
