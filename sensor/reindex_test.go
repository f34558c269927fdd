package sensor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
	"github.com/redschema/redschema/keys"
)

// collector writes readings as seed 003's collector does, command for
// command and byte for byte (docs/sensor-collector.md, "Storage Decision
// Logic" and "TTL and Cleanup Strategy"), under prefix pre: key(typ, loc)
// spells a key (with or without a hash tag).
type collector struct {
	rdb redis.UniversalClient
	key func(kind, loc string) string
}

func seedKeys(pre string, tags bool) func(kind, loc string) string {
	return func(kind, loc string) string {
		if tags {
			loc = "{" + loc + "}"
		}
		return pre + kind + ":" + loc
	}
}

func (s collector) motion(ctx context.Context, t *testing.T, loc string, on bool, seq int64, at time.Time) {
	t.Helper()
	state := "off"
	if on {
		state = "on"
	}
	ms := at.UnixMilli()
	m := fmt.Sprintf(`{"timestamp":%q,"state":%q,"entity_id":"binary_sensor.motion_%s","sequence":%d,"collected_at":%d}`, isoMS(at), state, loc, seq, ms)
	k := s.key("sensor:motion", loc)
	require.NoError(t, s.rdb.ZAdd(ctx, k, redis.Z{Score: float64(ms), Member: m}).Err())
	require.NoError(t, s.rdb.ZRemRangeByScore(ctx, k, "-inf", fmt.Sprintf("(%d", ms-86400000)).Err())
	require.NoError(t, s.rdb.Expire(ctx, k, 86400*time.Second).Err())
	if on {
		mk := s.key("meta:motion", loc)
		require.NoError(t, s.rdb.HSet(ctx, mk, "lastMotionTime", fmt.Sprint(ms)).Err())
		require.NoError(t, s.rdb.Expire(ctx, mk, 86400*time.Second).Err())
	}
}

func (s collector) env(ctx context.Context, t *testing.T, loc, field string, v float64, unit string, at time.Time) {
	t.Helper()
	ms := at.UnixMilli()
	m := fmt.Sprintf(`{"timestamp":%q,"collected_at":%d,%q:%v,"%s_unit":%q}`, isoMS(at), ms, field, v, field, unit)
	k := s.key("sensor:environmental", loc)
	require.NoError(t, s.rdb.ZAdd(ctx, k, redis.Z{Score: float64(ms), Member: m}).Err())
	require.NoError(t, s.rdb.ZRemRangeByScore(ctx, k, "-inf", fmt.Sprintf("(%d", ms-86400000)).Err())
	require.NoError(t, s.rdb.Expire(ctx, k, 86400*time.Second).Err())
}

func (s collector) generic(ctx context.Context, t *testing.T, typ, loc string, v float64, unit string, at time.Time) {
	t.Helper()
	ms := at.UnixMilli()
	m := fmt.Sprintf(`{"data":{"value":%v,"unit":%q,"trend":"stable"},"original_topic":"automation/raw/%s/%s","timestamp":%q,"collected_at":%d}`, v, unit, typ, loc, isoMS(at), ms)
	k, mk := s.key("sensor:"+typ, loc), s.key("meta:"+typ, loc)
	require.NoError(t, s.rdb.LPush(ctx, k, m).Err())
	require.NoError(t, s.rdb.LTrim(ctx, k, 0, 999).Err())
	require.NoError(t, s.rdb.Expire(ctx, k, 86400*time.Second).Err())
	require.NoError(t, s.rdb.HSet(ctx, mk, "last_update", fmt.Sprint(ms), "sensor_type", typ, "location", loc).Err())
	require.NoError(t, s.rdb.Expire(ctx, mk, 86400*time.Second).Err())
}

// reindexAll runs Reindex from "" until its cursor is "", and returns
// the calls' results.
func reindexAll(t *testing.T, ctx context.Context, c *Client) []ReindexResult {
	t.Helper()
	var out []ReindexResult
	for cur := ""; ; {
		res, err := c.Reindex(ctx, cur)
		require.NoError(t, err)
		out = append(out, res)
		if cur = res.Next; cur == "" {
			return out
		}
		require.Less(t, len(out), 100000, "the scan ends")
	}
}

// Readings the collector wrote with its own commands and bytes, keys
// byte-identical to its layout: discovery finds nothing until a
// Reindex, then finds every type and location, with SCAN and never KEYS;
// the queries read the collector's members (without "id").
func TestReindexFindsCollectorData(t *testing.T) {
	e := harness.New(t)
	if e.Backend == harness.Cluster {
		t.Skip("the collector's exact keys (NoHashTags) are standalone-only: a location's keys are not co-located on a cluster; TestReindexTagged runs there")
	}
	ctx := e.Ctx()
	rdb := e.FreshClient()
	cmds := &cmdCounter{n: map[string]int{}}
	rdb.AddHook(cmds)
	c, err := New(rdb, WithNamespace(keys.Namespace{Prefix: e.NS.Prefix, NoHashTags: true}))
	require.NoError(t, err)
	followServerClock(e, c)
	at := e.Now().Truncate(time.Millisecond).Add(-time.Minute)
	s := collector{rdb: e.Client, key: seedKeys(e.NS.Prefix, false)}
	s.motion(ctx, t, "study", true, 42, at)
	s.motion(ctx, t, "study", false, 43, at.Add(time.Second))
	s.env(ctx, t, "living_room", "temperature", 22.5, "°C", at)
	s.env(ctx, t, "living_room", "illuminance", 450, "lux", at.Add(456*time.Millisecond))
	s.generic(ctx, t, "pressure", "kitchen", 1013.25, "hPa", at)
	s.generic(ctx, t, "humidity", "bathroom", 55, "%", at)

	locs, err := c.Locations(ctx)
	require.NoError(t, err)
	assert.Empty(t, locs, "the collector writes no index")
	types, err := c.Types(ctx, "study")
	require.NoError(t, err)
	assert.Empty(t, types)

	results := reindexAll(t, ctx, c)
	indexed, scanned := 0, 0
	for _, r := range results {
		indexed += r.Indexed
		scanned += r.Scanned
		assert.Empty(t, r.Skipped)
	}
	assert.Equal(t, 4, scanned, "the raw keys: sensor:motion, sensor:environmental, two lists (no meta:*)")
	assert.Equal(t, 4, indexed)
	assert.Equal(t, len(results), cmds.get("scan"), "one SCAN per call")
	assert.Zero(t, cmds.get("keys"), "no KEYS")

	locs, err = c.Locations(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"bathroom", "kitchen", "living_room", "study"}, locs)
	for loc, want := range map[string][]string{
		"study":       {Motion},
		"living_room": {Illuminance, Temperature},
		"kitchen":     {"pressure"},
		"bathroom":    {"humidity"},
	} {
		types, err := c.Types(ctx, loc)
		require.NoError(t, err)
		assert.Equal(t, want, types, loc)
	}
	// The index holds each type's newest reading.
	ix := e.Client.ZRangeWithScores(ctx, e.NS.Prefix+"sensor-index:types:living_room", 0, -1).Val()
	require.Len(t, ix, 2)
	assert.Equal(t, []redis.Z{{Score: float64(at.UnixMilli()), Member: Temperature}, {Score: float64(at.Add(456 * time.Millisecond).UnixMilli()), Member: Illuminance}}, ix)

	// The collector's id-less members read as readings.
	cur, err := c.Current(ctx, Motion, "study")
	require.NoError(t, err)
	assert.Equal(t, Off, cur.State)
	assert.Equal(t, int64(43), cur.Sequence)
	assert.Empty(t, cur.ID)
	cur, err = c.Current(ctx, Illuminance, "living_room")
	require.NoError(t, err)
	assert.Equal(t, 450.0, cur.Value)
	cur, err = c.Current(ctx, "pressure", "kitchen")
	require.NoError(t, err)
	assert.Equal(t, 1013.25, cur.Value)
	assert.Equal(t, "hPa", cur.Unit)
	assert.Equal(t, "automation/raw/pressure/kitchen", cur.Topic)
	since, err := c.SinceMotion(ctx, "study")
	require.NoError(t, err)
	assert.InDelta(t, time.Minute.Seconds(), since.Seconds(), 5)
}

// With hash tags (the default, and on a cluster), the repair finds the
// readings of many locations spread over every master, is bounded (one
// SCAN per call, several calls), idempotent (a second run changes
// nothing), and leaves out readings older than the retention.
func TestReindexTagged(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	rdb := e.FreshClient()
	cmds := &cmdCounter{n: map[string]int{}}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		// Reindex sends SCAN to each master's own client, which the
		// cluster client's hooks do not see.
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(cmds) })
	} else {
		rdb.AddHook(cmds)
	}
	c, err := New(rdb, WithNamespace(e.NS))
	require.NoError(t, err)
	followServerClock(e, c)
	at := e.Now().Truncate(time.Millisecond).Add(-time.Minute)
	s := collector{rdb: e.Client, key: seedKeys(e.NS.Prefix, true)}
	var want []string
	for i := range 40 {
		loc := fmt.Sprintf("room%02d", i)
		want = append(want, loc)
		s.motion(ctx, t, loc, true, int64(i), at)
		s.generic(ctx, t, "pressure", loc, 1000+float64(i), "hPa", at.Add(time.Duration(i)*time.Millisecond))
	}
	// Stale: only readings older than the retention.
	s.env(ctx, t, "cellar", "temperature", 9, "°C", e.Now().Add(-25*time.Hour))

	// Padding that matches the SCAN pattern's prefix but no sensor key,
	// so that a real server's SCAN needs several calls.
	if e.Real() {
		pipe := e.Client.Pipeline()
		for i := range 2500 {
			pipe.Set(ctx, fmt.Sprintf("%ssensor-pad:%d", e.NS.Prefix, i), "x", time.Hour)
		}
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
	}

	results := reindexAll(t, ctx, c)
	indexed := 0
	for _, r := range results {
		indexed += r.Indexed
		assert.Empty(t, r.Skipped)
	}
	assert.Equal(t, 80, indexed, "the stale key is not indexed")
	assert.Equal(t, len(results), cmds.get("scan"), "one SCAN per call")
	if e.Real() {
		assert.Greater(t, len(results), 1, "bounded: the scan takes several calls")
	}
	assert.Zero(t, cmds.get("keys"))
	locs, err := c.Locations(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, locs)
	types, err := c.Types(ctx, "room07")
	require.NoError(t, err)
	assert.Equal(t, []string{Motion, "pressure"}, types)
	types, err = c.Types(ctx, "cellar")
	require.NoError(t, err)
	assert.Empty(t, types)

	snapshot := func() map[string][]redis.Z {
		out := map[string][]redis.Z{}
		for _, k := range e.Keys() {
			if strings.Contains(k, "sensor-index:") {
				out[k] = e.Client.ZRangeWithScores(ctx, k, 0, -1).Val()
			}
		}
		return out
	}
	before := snapshot()
	require.Len(t, before, 41, "40 types indexes and the locations index")
	reindexAll(t, ctx, c)
	assert.Equal(t, before, snapshot(), "idempotent")

	// The library's own writes go on from the rebuilt index.
	_, err = c.Ingest(ctx, TemperatureReading("room07", 20, "°C", at.Add(time.Second)))
	require.NoError(t, err)
	types, err = c.Types(ctx, "room07")
	require.NoError(t, err)
	assert.Equal(t, []string{Motion, "pressure", Temperature}, types)
}

// Keys that match the layout's SCAN pattern but hold something else are
// skipped and counted, each error naming its key and matching
// keys.ErrCorrupt; the good keys of the same page are indexed; nothing
// panics.
func TestReindexHostileKeys(t *testing.T) {
	e := harness.New(t)
	ctx := e.Ctx()
	c := newClient(t, e)
	at := e.Now().Truncate(time.Millisecond).Add(-time.Minute)
	s := collector{rdb: e.Client, key: seedKeys(e.NS.Prefix, true)}
	s.motion(ctx, t, "good", true, 1, at)
	pre := e.NS.Prefix
	hostile := map[string]func(k string) error{
		pre + "sensor:motion:{str}": func(k string) error { return e.Client.Set(ctx, k, "x", time.Hour).Err() },
		pre + "sensor:environmental:{junk}": func(k string) error {
			return e.Client.ZAdd(ctx, k, redis.Z{Score: float64(at.UnixMilli()), Member: "not json"}).Err()
		},
		pre + "sensor:motion:{nostate}": func(k string) error {
			return e.Client.ZAdd(ctx, k, redis.Z{Score: float64(at.UnixMilli()), Member: `{"timestamp":"x"}`}).Err()
		},
		pre + "sensor:pressure:{hash}":   func(k string) error { return e.Client.HSet(ctx, k, "a", "b").Err() },
		pre + "sensor:pressure:{notime}": func(k string) error { return e.Client.LPush(ctx, k, `{"data":{}}`).Err() },
		pre + "sensor:Bad_Type:{x}":      func(k string) error { return e.Client.LPush(ctx, k, `{}`).Err() },
	}
	for k, put := range hostile {
		require.NoError(t, put(k))
	}
	// A types index with a foreign score: its location's keys are skipped.
	s.motion(ctx, t, "badindex", true, 1, at)
	require.NoError(t, e.Client.ZAdd(ctx, pre+"sensor-index:types:{badindex}", redis.Z{Score: 1.5, Member: Motion}).Err())
	hostile[pre+"sensor-index:types:{badindex}"] = nil

	var skipped []error
	for _, r := range reindexAll(t, ctx, c) {
		skipped = append(skipped, r.Skipped...)
	}
	require.Len(t, skipped, len(hostile))
	for _, err := range skipped {
		t.Log(err)
		assert.ErrorIs(t, err, keys.ErrCorrupt)
		named := false
		for k := range hostile {
			named = named || strings.Contains(err.Error(), k)
		}
		assert.True(t, named, "names its key: %v", err)
	}
	types, err := c.Types(ctx, "good")
	require.NoError(t, err)
	assert.Equal(t, []string{Motion}, types)
}

// A cursor Reindex did not make is ErrInvalid, before anything is read.
func TestReindexBadCursor(t *testing.T) {
	e := harness.New(t)
	c := newClient(t, e)
	for _, cur := range []string{"x", "-1", "+1", " 1", "1 2 3", "18446744073709551616"} {
		_, err := c.Reindex(e.Ctx(), cur)
		assert.ErrorIs(t, err, ErrInvalid, cur)
	}
	if e.Backend != harness.Cluster {
		_, err := c.Reindex(e.Ctx(), "10.0.0.1:7001 5")
		assert.ErrorIs(t, err, ErrInvalid, "a node on a standalone server")
	} else {
		_, err := c.Reindex(e.Ctx(), "10.255.0.1:1 5")
		assert.ErrorIs(t, err, ErrInvalid, "not a master")
	}
	_, err := c.Reindex(e.Ctx(), "")
	assert.False(t, errors.Is(err, ErrInvalid))
}

// An index lost (evicted, flushed, not replicated before a failover) is
// rebuilt from the readings, in either encoding.
func TestReindexRestoresALostIndex(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			e := harness.New(t)
			ctx := e.Ctx()
			c := newClient(t, e, enc.opts...)
			at := e.Now().Truncate(time.Millisecond).Add(-time.Minute)
			for _, r := range []Reading{
				MotionReading("study", "m", true, 1, at),
				TemperatureReading("study", 20, "°C", at),
				IlluminanceReading("hall", 300, "lux", at.Add(time.Second)),
				GenericReading("pressure", "kitchen", 1013, "hPa", at),
			} {
				_, err := c.Ingest(ctx, r)
				require.NoError(t, err)
			}
			var idx []string
			for _, k := range e.Keys() {
				if strings.Contains(k, "sensor-index:") {
					idx = append(idx, k)
				}
			}
			require.Len(t, idx, 4)
			want := map[string][]redis.Z{}
			for _, k := range idx {
				want[k] = e.Client.ZRangeWithScores(ctx, k, 0, -1).Val()
				require.NoError(t, e.Client.Del(ctx, k).Err())
			}
			locs, err := c.Locations(ctx)
			require.NoError(t, err)
			require.Empty(t, locs)

			reindexAll(t, ctx, c)
			got := map[string][]redis.Z{}
			for _, k := range idx {
				got[k] = e.Client.ZRangeWithScores(ctx, k, 0, -1).Val()
				assert.Positive(t, e.Client.PTTL(ctx, k).Val(), "%s has a TTL", k)
			}
			assert.Equal(t, want, got, "the index as the writes left it")
			types, err := c.Types(ctx, "study")
			require.NoError(t, err)
			assert.Equal(t, []string{Motion, Temperature}, types)
		})
	}
}
