package sensor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// With WithoutReadingIDs and NoHashTags, every member is the bytes the
// collector writes (its JSON.stringify: no "id", fields in its order,
// '&' unescaped), and the collector's test helper writes the same.
func TestWithoutReadingIDsWritesCollectorBytes(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Cluster {
		t.Skip("the collector's exact keys (NoHashTags) are standalone-only; TestWithoutReadingIDsResend runs on the cluster")
	}
	ctx := e.Ctx()
	pre := e.NS.Prefix
	c, err := New(e.Client, WithNamespace(keys.Namespace{Prefix: pre, NoHashTags: true}), WithoutReadingIDs())
	require.NoError(t, err)
	followServerClock(e, c)
	at := e.Now().Truncate(time.Millisecond).Add(-time.Minute)

	m := MotionReading("study", "binary_sensor.motion_study", true, 42, at)
	tr := TemperatureReading("living_room", 22.5, "°C", at)
	il := IlluminanceReading("living_room", 450, "lux", at.Add(456*time.Millisecond))
	p := Reading{Type: "pressure", Location: "kitchen", Time: at, Topic: "automation/raw/pressure/kitchen",
		Data: json.RawMessage(`{"value":1013.25,"unit":"hPa","trend":"stable"}`)}
	h := GenericReading("humidity", "bath", 55, "%<rel>&", at)
	for _, r := range []Reading{m, tr, il, p, h} {
		r.CollectedAt = r.Time // the collector helper's collected_at
		res, err := c.Ingest(ctx, r)
		require.NoError(t, err)
		assert.Equal(t, Stored, res.Outcome)
		assert.Empty(t, res.ID, "no ID to resend by")
	}
	ours := map[string][]string{}
	for _, k := range []string{"sensor:motion:study", "sensor:environmental:living_room"} {
		ours[k] = e.Client.ZRange(ctx, pre+k, 0, -1).Val()
	}
	ours["sensor:pressure:kitchen"] = e.Client.LRange(ctx, pre+"sensor:pressure:kitchen", 0, -1).Val()
	ours["meta:motion:study"] = []string{e.Client.HGet(ctx, pre+"meta:motion:study", "lastMotionTime").Val()}

	// The collector writes the same readings under another prefix.
	other := pre + "seed:"
	s := collector{rdb: e.Client, key: seedKeys(other, false)}
	s.motion(ctx, t, "study", true, 42, at)
	s.env(ctx, t, "living_room", "temperature", 22.5, "°C", at)
	s.env(ctx, t, "living_room", "illuminance", 450, "lux", at.Add(456*time.Millisecond))
	s.generic(ctx, t, "pressure", "kitchen", 1013.25, "hPa", at)
	theirs := map[string][]string{}
	for _, k := range []string{"sensor:motion:study", "sensor:environmental:living_room"} {
		theirs[k] = e.Client.ZRange(ctx, other+k, 0, -1).Val()
	}
	theirs["sensor:pressure:kitchen"] = e.Client.LRange(ctx, other+"sensor:pressure:kitchen", 0, -1).Val()
	theirs["meta:motion:study"] = []string{e.Client.HGet(ctx, other+"meta:motion:study", "lastMotionTime").Val()}
	assert.Equal(t, theirs, ours)

	ts := isoMS(at)
	assert.Equal(t, []string{`{"data":{"value":55,"unit":"%<rel>&"},"timestamp":"` + ts + `","collected_at":` + itoa(at.UnixMilli()) + `}`},
		e.Client.LRange(ctx, pre+"sensor:humidity:bath", 0, -1).Val(), "no HTML escaping, the collector's field order")
}

// Without IDs a resend is recognised by its bytes: a write whose reply
// is lost and which go-redis sends again stores and counts the reading
// once; so does the same reading sent twice. Tags on: every backend.
func TestWithoutReadingIDsResend(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	pc, p := e.ProxyClient(nil)
	c, err := New(pc, WithNamespace(e.NS), WithoutReadingIDs())
	require.NoError(t, err)
	followServerClock(e, c)
	for _, op := range []*call.Op{ingestMotionOp, ingestEnvOp, ingestListOp, touchLocationOp} {
		require.NoError(t, op.Load(ctx, pc))
	}
	at := e.Now().Truncate(time.Millisecond).Add(-time.Minute)
	for _, r := range []Reading{
		MotionReading("study", "m", true, 1, at),
		TemperatureReading("study", 21.5, "°C", at),
		GenericReading("pressure", "study", 1013, "hPa", at),
	} {
		r.CollectedAt = at
		tg := c.mustTarget(t, r.Type, r.Location)
		lost := p.Lost()
		p.LoseReply(tg.ingest.Script().Hash())
		res, err := c.Ingest(ctx, r)
		require.NoError(t, err, r.Type)
		require.Equal(t, lost+1, p.Lost(), "%s: the reply was lost once", r.Type)
		assert.Equal(t, Stored, res.Outcome, r.Type)
		// The same reading again, as a retry made by hand.
		res, err = c.Ingest(ctx, r)
		require.NoError(t, err, r.Type)
		assert.Equal(t, Stored, res.Outcome, r.Type)

		rs, err := c.Latest(ctx, r.Type, "study", 10)
		require.NoError(t, err)
		require.Len(t, rs, 1, "%s: stored once", r.Type)
		assert.Empty(t, rs[0].ID)
		s, err := c.Aggregate(ctx, r.Type, "study", at, at, time.Minute, MinuteTier)
		require.NoError(t, err)
		require.Len(t, s.Buckets, 1)
		assert.Equal(t, int64(1), s.Buckets[0].Count, "%s: counted once", r.Type)
	}
	// A different reading at the same time is another member.
	r := TemperatureReading("study", 22, "°C", at)
	r.CollectedAt = at
	_, err = c.Ingest(ctx, r)
	require.NoError(t, err)
	rs, err := c.Latest(ctx, Temperature, "study", 10)
	require.NoError(t, err)
	assert.Len(t, rs, 2)
}

// WithoutReadingIDs writes the collector's JSON: not with the compact
// encoding.
func TestWithoutReadingIDsNotCompact(t *testing.T) {
	e := harness.New(t)
	_, err := New(e.Client, WithoutReadingIDs(), WithCompactEncoding())
	assert.ErrorIs(t, err, ErrInvalid)
}
