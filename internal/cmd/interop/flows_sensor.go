package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/sensor"
)

// sensorFlows: seed 003, the sensor collector. Its service writes the
// keys and members docs/sensor-collector.md documents; the library in
// its seed-compatible mode (keys.Namespace{NoHashTags: true} and
// sensor.WithoutReadingIDs) finds that data with Reindex and reads it,
// and writes members the collector's readers read, byte for byte the
// collector's. The seed has no client code, so its commands run with all
// three Node clients.
func sensorFlows() []flow {
	all := []string{"ioredis6", "redis4", "redis6"}
	return []flow{
		{seed: "003", name: "sensor discovery after Reindex node->go", area: "sensor", clients: all, run: sensorDiscoveryNodeGo},
		{seed: "003", name: "sensor queries node->go", area: "sensor", clients: all, run: sensorQueriesNodeGo},
		{seed: "003", name: "sensor ingest go->node", area: "sensor", clients: all, run: sensorIngestGoNode},
		{seed: "003", name: "sensor members byte-identical go->node", area: "sensor", clients: all, run: sensorBytesSeedMode},
		{seed: "003", name: "sensor members default mode go->node", area: "sensor", clients: all, run: sensorBytesDefault,
			documented: `without sensor.WithoutReadingIDs every member ends with the reading's "id" (resend recognition); the collector's readers ignore it (docs/sensor.md, Sharing keys with the collector)`},
		{seed: "003", name: "sensor seed discovery (KEYS meta:*) go->node", area: "sensor", clients: all, run: sensorSeedTypesGoNode},
		{seed: "003", name: "sensor both write one room node->go", area: "sensor", clients: all, run: sensorBothWrite},
		{seed: "003", name: "sensor aggregate of the collector's readings node->go", area: "sensor", clients: all, run: sensorAggregateNodeGo,
			documented: "the rollups count only the library's writes: Aggregate with AutoTier picks a rollup tier without the collector's readings; RawTier, or a client WithoutRollups, counts them (docs/sensor.md, Sharing keys with the collector)"},
		{seed: "003", name: "sensor new location between Reindexes node->go", area: "sensor", clients: all, run: sensorLagNodeGo,
			documented: "a location the collector starts writing after a Reindex is listed by Locations from the next Reindex (or the library's first write there) on (docs/sensor.md, Sharing keys with the collector)"},
	}
}

// sensorNS is the collector's namespace: no prefix, no hash tags.
var sensorNS = keys.Namespace{NoHashTags: true}

// sensorMsg is one reading as interop/flows/sensor.js's store takes it.
type sensorMsg struct {
	Type        string          `json:"type"`
	Location    string          `json:"location"`
	At          int64           `json:"at"`
	CollectedAt int64           `json:"collectedAt,omitempty"`
	State       string          `json:"state,omitempty"`
	EntityID    string          `json:"entityId,omitempty"`
	Sequence    int64           `json:"sequence,omitempty"`
	Value       float64         `json:"value,omitempty"`
	Unit        string          `json:"unit,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
	Topic       string          `json:"topic,omitempty"`
}

// reading is m as the library's Reading.
func (m sensorMsg) reading() sensor.Reading {
	r := sensor.Reading{Type: m.Type, Location: m.Location, Time: time.UnixMilli(m.At), State: m.State,
		EntityID: m.EntityID, Sequence: m.Sequence, Value: m.Value, Unit: m.Unit, Data: m.Data, Topic: m.Topic,
		HasValue: m.Data == nil}
	if m.CollectedAt > 0 {
		r.CollectedAt = time.UnixMilli(m.CollectedAt)
	}
	return r
}

// sensorFixture is a collector's morning in four rooms, relative to now.
func sensorFixture(now time.Time, loc func(string) string) []sensorMsg {
	at := now.Add(-time.Minute).UnixMilli()
	col := now.UnixMilli()
	return []sensorMsg{
		{Type: "motion", Location: loc("study"), At: at, CollectedAt: col, State: "on", EntityID: "binary_sensor.motion_study", Sequence: 42},
		{Type: "motion", Location: loc("study"), At: at + 30000, CollectedAt: col, State: "off", EntityID: "binary_sensor.motion_study", Sequence: 43},
		{Type: "temperature", Location: loc("living_room"), At: at, CollectedAt: col, Value: 22.5, Unit: "°C"},
		{Type: "illuminance", Location: loc("living_room"), At: at + 456, CollectedAt: col, Value: 450, Unit: "lux"},
		{Type: "pressure", Location: loc("kitchen"), At: at, CollectedAt: col, Data: json.RawMessage(`{"value":1013.25,"unit":"hPa","trend":"stable"}`),
			Topic: "automation/raw/pressure/kitchen"},
		{Type: "humidity", Location: loc("bathroom"), At: at, CollectedAt: col, Data: json.RawMessage(`{"value":55,"unit":"%"}`),
			Topic: "automation/raw/humidity/bathroom"},
	}
}

// sensorSame keeps a room's name.
func sensorSame(s string) string { return s }

// sensorClient returns the library's client in the collector's mode.
func sensorClient(e *env, opts ...sensor.Option) (*sensor.Client, error) {
	return sensor.New(e.rdb, append([]sensor.Option{sensor.WithNamespace(sensorNS)}, opts...)...)
}

// sensorReindexAll runs Reindex to the end of its scan.
func sensorReindexAll(ctx context.Context, s *sensor.Client) (sensor.ReindexResult, error) {
	var sum sensor.ReindexResult
	for cur, calls := "", 0; ; calls++ {
		res, err := s.Reindex(ctx, cur)
		if err != nil {
			return sum, err
		}
		sum.Scanned += res.Scanned
		sum.Indexed += res.Indexed
		sum.Skipped = append(sum.Skipped, res.Skipped...)
		if cur = res.Next; cur == "" {
			return sum, nil
		}
		if calls > 100000 {
			return sum, errors.New("sensor: Reindex did not finish its scan")
		}
	}
}

// sensorDiscoveryNodeGo: the collector writes four rooms; the library's
// discovery is empty (the collector writes no index) until a Reindex,
// then lists every location and each one's types.
func sensorDiscoveryNodeGo(ctx context.Context, e *env) error {
	s, err := sensorClient(e, sensor.WithoutReadingIDs())
	if err != nil {
		return err
	}
	if err := e.node(ctx, "collect", map[string]any{"readings": sensorFixture(time.Now(), sensorSame)}, nil); err != nil {
		return err
	}
	res, err := sensorReindexAll(ctx, s)
	if err != nil {
		return err
	}
	if len(res.Skipped) > 0 {
		return diverge("Reindex skipped the collector's keys: %v", res.Skipped)
	}
	locs, err := s.Locations(ctx)
	if err != nil {
		return err
	}
	if want := []string{"bathroom", "kitchen", "living_room", "study"}; !slices.Equal(locs, want) {
		return diverge("Locations after Reindex: %q, want %q", locs, want)
	}
	for loc, want := range map[string][]string{
		"study": {"motion"}, "living_room": {"illuminance", "temperature"}, "kitchen": {"pressure"}, "bathroom": {"humidity"},
	} {
		types, err := s.Types(ctx, loc)
		if err != nil {
			return err
		}
		if !slices.Equal(types, want) {
			return diverge("Types(%s) after Reindex: %q, want %q", loc, types, want)
		}
	}
	return nil
}

// sensorQueriesNodeGo: the library's queries read the collector's
// members (no "id") as the readings the collector stored.
func sensorQueriesNodeGo(ctx context.Context, e *env) error {
	s, err := sensorClient(e, sensor.WithoutReadingIDs())
	if err != nil {
		return err
	}
	now := time.Now()
	if err := e.node(ctx, "collect", map[string]any{"readings": sensorFixture(now, sensorSame)}, nil); err != nil {
		return err
	}
	m, err := s.Current(ctx, sensor.Motion, "study")
	if err != nil {
		return diverge("Current motion: %v", err)
	}
	if m.State != sensor.Off || m.Sequence != 43 || m.EntityID != "binary_sensor.motion_study" {
		return diverge("Current motion: %+v, want off, sequence 43", m)
	}
	if ok, err := s.MotionWithin(ctx, "study", 10*time.Minute); err != nil || !ok {
		return diverge("MotionWithin(study, 10m): %v, %v; want true", ok, err)
	}
	if d, err := s.SinceMotion(ctx, "study"); err != nil || d < 50*time.Second || d > 2*time.Minute {
		return diverge("SinceMotion(study): %v, %v; want about 1m", d, err)
	}
	for typ, want := range map[string]float64{sensor.Temperature: 22.5, sensor.Illuminance: 450} {
		r, err := s.Current(ctx, typ, "living_room")
		if err != nil || r.Value != want {
			return diverge("Current %s: %+v, %v; want %v", typ, r, err, want)
		}
	}
	p, err := s.Current(ctx, "pressure", "kitchen")
	if err != nil || p.Value != 1013.25 || p.Unit != "hPa" || p.Topic != "automation/raw/pressure/kitchen" {
		return diverge("Current pressure: %+v, %v", p, err)
	}
	return nil
}

type sensorMotionQ struct {
	Recent         []string `json:"recent"`
	Last10m        []string `json:"last10m"`
	LastMotionTime *string  `json:"lastMotionTime"`
	TTL            int64    `json:"ttl"`
}

type sensorEnvQ struct {
	Current  []string `json:"current"`
	Recent   []string `json:"recent"`
	LastHour []string `json:"lastHour"`
	TTL      int64    `json:"ttl"`
}

type sensorGenericQ struct {
	Latest *string  `json:"latest"`
	Last10 []string `json:"last10"`
	Meta   *string  `json:"meta"`
	TTL    int64    `json:"ttl"`
}

// sensorIngestGoNode: the library ingests a morning; the collector's
// readers' own queries (motion, environmental, generic) read it.
func sensorIngestGoNode(ctx context.Context, e *env) error {
	s, err := sensorClient(e, sensor.WithoutReadingIDs())
	if err != nil {
		return err
	}
	fix := sensorFixture(time.Now(), sensorSame)
	for _, m := range fix {
		if _, err := s.Ingest(ctx, m.reading()); err != nil {
			return err
		}
	}
	var mq sensorMotionQ
	if err := e.node(ctx, "motionQueries", map[string]string{"location": "study"}, &mq); err != nil {
		return err
	}
	if len(mq.Recent) != 2 || len(mq.Last10m) != 2 {
		return diverge("motion queries: %d recent, %d in the last 10 minutes; want 2, 2", len(mq.Recent), len(mq.Last10m))
	}
	var newest struct {
		State    string `json:"state"`
		Sequence int64  `json:"sequence"`
	}
	if err := json.Unmarshal([]byte(mq.Recent[0]), &newest); err != nil || newest.State != "off" || newest.Sequence != 43 {
		return diverge("the newest motion event %s: %v", mq.Recent[0], err)
	}
	if mq.LastMotionTime == nil || *mq.LastMotionTime != fmt.Sprint(fix[0].At) {
		return diverge("lastMotionTime %v, want %d", mq.LastMotionTime, fix[0].At)
	}
	if mq.TTL <= 0 || mq.TTL > 86400 {
		return diverge("TTL sensor:motion:study = %d, want ~86400 or less", mq.TTL)
	}
	var eq sensorEnvQ
	if err := e.node(ctx, "envQueries", map[string]string{"location": "living_room"}, &eq); err != nil {
		return err
	}
	if len(eq.Current) != 1 || len(eq.Recent) != 2 || len(eq.LastHour) != 2 || eq.TTL <= 0 || eq.TTL > 86400 {
		return diverge("environmental queries: %+v", eq)
	}
	var cur struct {
		Illuminance *float64 `json:"illuminance"`
		Unit        string   `json:"illuminance_unit"`
	}
	if err := json.Unmarshal([]byte(eq.Current[0]), &cur); err != nil || cur.Illuminance == nil || *cur.Illuminance != 450 || cur.Unit != "lux" {
		return diverge("the newest environmental reading %s: %v", eq.Current[0], err)
	}
	var gq sensorGenericQ
	if err := e.node(ctx, "genericQueries", map[string]string{"type": "pressure", "location": "kitchen"}, &gq); err != nil {
		return err
	}
	if gq.Latest == nil || len(gq.Last10) != 1 || gq.Meta == nil || *gq.Meta != "pressure" || gq.TTL <= 0 || gq.TTL > 86400 {
		return diverge("generic queries: %+v", gq)
	}
	var g struct {
		Data struct {
			Value float64 `json:"value"`
			Unit  string  `json:"unit"`
		} `json:"data"`
		Topic string `json:"original_topic"`
	}
	if err := json.Unmarshal([]byte(*gq.Latest), &g); err != nil || g.Data.Value != 1013.25 || g.Data.Unit != "hPa" || g.Topic != "automation/raw/pressure/kitchen" {
		return diverge("LINDEX sensor:pressure:kitchen 0 = %s: %v", *gq.Latest, err)
	}
	return nil
}

// sensorBytes writes the fixture with the library (rooms as they are)
// and with the collector (rooms with "_node" appended), and compares
// each raw key's members byte for byte.
func sensorBytes(ctx context.Context, e *env, opts ...sensor.Option) error {
	s, err := sensorClient(e, opts...)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, m := range sensorFixture(now, sensorSame) {
		if _, err := s.Ingest(ctx, m.reading()); err != nil {
			return err
		}
	}
	node := func(l string) string { return l + "_node" }
	if err := e.node(ctx, "collect", map[string]any{"readings": sensorFixture(now, node)}, nil); err != nil {
		return err
	}
	for _, k := range []struct {
		key  string
		list bool
	}{{"sensor:motion:study", false}, {"sensor:environmental:living_room", false}, {"sensor:pressure:kitchen", true}, {"sensor:humidity:bathroom", true}} {
		var theirs []string
		// the key's last segment is the room
		if err := e.node(ctx, "members", map[string]any{"key": k.key + "_node", "list": k.list}, &theirs); err != nil {
			return err
		}
		var ours []string
		if k.list {
			ours, err = e.rdb.LRange(ctx, k.key, 0, -1).Result()
		} else {
			ours, err = e.rdb.ZRange(ctx, k.key, 0, -1).Result()
		}
		if err != nil {
			return err
		}
		if !slices.Equal(ours, theirs) {
			return diverge("%s: the library wrote %q, the collector %q", k.key, ours, theirs)
		}
	}
	ours, err := e.rdb.HGet(ctx, "meta:motion:study", "lastMotionTime").Result()
	if err != nil {
		return err
	}
	theirs, err := e.rdb.HGet(ctx, "meta:motion:study_node", "lastMotionTime").Result()
	if err != nil {
		return err
	}
	if ours != theirs {
		return diverge("lastMotionTime: the library wrote %q, the collector %q", ours, theirs)
	}
	return nil
}

// sensorBytesSeedMode: with WithoutReadingIDs every member is the
// collector's bytes.
func sensorBytesSeedMode(ctx context.Context, e *env) error {
	return sensorBytes(ctx, e, sensor.WithoutReadingIDs())
}

// sensorBytesDefault: by default members carry the reading's ID (the
// documented divergence); the collector's readers still parse them.
func sensorBytesDefault(ctx context.Context, e *env) error {
	return sensorBytes(ctx, e)
}

// sensorSeedTypesGoNode: the collector's own discovery (KEYS
// meta:*:{location}) lists the same types for the library's writes as
// for its own: meta hashes for motion ("on") and the generic types.
func sensorSeedTypesGoNode(ctx context.Context, e *env) error {
	s, err := sensorClient(e, sensor.WithoutReadingIDs())
	if err != nil {
		return err
	}
	now := time.Now()
	fix := sensorFixture(now, func(string) string { return "hall" })
	for _, m := range fix {
		if _, err := s.Ingest(ctx, m.reading()); err != nil {
			return err
		}
	}
	var ours, theirs []string
	if err := e.node(ctx, "typesInLocation", map[string]string{"location": "hall"}, &ours); err != nil {
		return err
	}
	node := sensorFixture(now, func(string) string { return "hall_node" })
	if err := e.node(ctx, "collect", map[string]any{"readings": node}, nil); err != nil {
		return err
	}
	if err := e.node(ctx, "typesInLocation", map[string]string{"location": "hall_node"}, &theirs); err != nil {
		return err
	}
	if !slices.Equal(ours, theirs) {
		return diverge("KEYS meta:*:hall finds %q for the library's writes, %q for the collector's", ours, theirs)
	}
	return nil
}

// sensorLagNodeGo: after a Reindex the collector starts a new location;
// Locations misses it until the next Reindex, which finds it (that the
// next one finds it is not the documented part: its failure fails).
func sensorLagNodeGo(ctx context.Context, e *env) error {
	s, err := sensorClient(e, sensor.WithoutReadingIDs())
	if err != nil {
		return err
	}
	now := time.Now()
	fix := sensorFixture(now, sensorSame)
	if err := e.node(ctx, "collect", map[string]any{"readings": fix[:1]}, nil); err != nil {
		return err
	}
	if _, err := sensorReindexAll(ctx, s); err != nil {
		return err
	}
	if err := e.node(ctx, "collect", map[string]any{"readings": fix[2:3]}, nil); err != nil {
		return err
	}
	before, err := s.Locations(ctx)
	if err != nil {
		return err
	}
	if _, err := sensorReindexAll(ctx, s); err != nil {
		return err
	}
	after, err := s.Locations(ctx)
	if err != nil {
		return err
	}
	if want := []string{"living_room", "study"}; !slices.Equal(after, want) {
		return fmt.Errorf("after the second Reindex, Locations: %q, want %q", after, want)
	}
	if !slices.Contains(before, "living_room") {
		return diverge("Locations before the second Reindex: %q (no living_room)", before)
	}
	return nil
}

// sensorBothWrite: the collector and the library write the same room's
// motion during a migration; each side's reads see both sides' events,
// and lastMotionTime follows the newest "on" whoever wrote it.
func sensorBothWrite(ctx context.Context, e *env) error {
	s, err := sensorClient(e, sensor.WithoutReadingIDs())
	if err != nil {
		return err
	}
	now := time.Now()
	t1 := now.Add(-3 * time.Minute).UnixMilli()
	on := sensorMsg{Type: "motion", Location: "study", At: t1, State: "on", EntityID: "binary_sensor.motion_study", Sequence: 1}
	if err := e.node(ctx, "collect", map[string]any{"readings": []sensorMsg{on}}, nil); err != nil {
		return err
	}
	if _, err := s.Ingest(ctx, sensor.MotionReading("study", "binary_sensor.motion_study", false, 2, time.UnixMilli(t1+60000))); err != nil {
		return err
	}
	rs, err := s.Latest(ctx, sensor.Motion, "study", 10)
	if err != nil {
		return err
	}
	if len(rs) != 2 || rs[0].State != sensor.Off || rs[1].State != sensor.On {
		return diverge("Latest(motion, study) after both wrote: %+v", rs)
	}
	var mq sensorMotionQ
	if err := e.node(ctx, "motionQueries", map[string]string{"location": "study"}, &mq); err != nil {
		return err
	}
	if len(mq.Recent) != 2 || mq.LastMotionTime == nil || *mq.LastMotionTime != fmt.Sprint(t1) {
		return diverge("the collector's motion queries after both wrote: %+v", mq)
	}
	t3 := t1 + 120000
	if _, err := s.Ingest(ctx, sensor.MotionReading("study", "binary_sensor.motion_study", true, 3, time.UnixMilli(t3))); err != nil {
		return err
	}
	if err := e.node(ctx, "motionQueries", map[string]string{"location": "study"}, &mq); err != nil {
		return err
	}
	if mq.LastMotionTime == nil || *mq.LastMotionTime != fmt.Sprint(t3) {
		return diverge("lastMotionTime after the library's \"on\": %v, want %d", mq.LastMotionTime, t3)
	}
	if d, err := s.SinceMotion(ctx, "study"); err != nil || d > 2*time.Minute {
		return diverge("SinceMotion after the library's \"on\": %v, %v", d, err)
	}
	return nil
}

// sensorAggregateNodeGo: the collector writes an hour of temperatures;
// Aggregate over the raw readings (RawTier, or any tier of a client
// WithoutRollups) counts them; AutoTier with rollups (a rollup tier) does
// not, the documented part.
func sensorAggregateNodeGo(ctx context.Context, e *env) error {
	s, err := sensorClient(e, sensor.WithoutReadingIDs())
	if err != nil {
		return err
	}
	now := time.Now().Truncate(time.Minute)
	var msgs []sensorMsg
	for i := range 6 {
		msgs = append(msgs, sensorMsg{Type: "temperature", Location: "living_room", At: now.Add(-time.Duration(60-10*i) * time.Minute).UnixMilli(),
			Value: 20 + float64(i), Unit: "°C"})
	}
	if err := e.node(ctx, "collect", map[string]any{"readings": msgs}, nil); err != nil {
		return err
	}
	from, to := now.Add(-time.Hour), now
	raw, err := s.Aggregate(ctx, sensor.Temperature, "living_room", from, to, time.Hour, sensor.RawTier)
	if err != nil {
		return err
	}
	var n int64
	for _, b := range raw.Buckets {
		n += b.Count
	}
	if n != 6 {
		return fmt.Errorf("raw: Aggregate(RawTier) counts %d of the collector's 6 readings", n)
	}
	plain, err := sensorClient(e, sensor.WithoutReadingIDs(), sensor.WithoutRollups())
	if err != nil {
		return err
	}
	if raw, err = plain.Aggregate(ctx, sensor.Temperature, "living_room", from, to, time.Hour, sensor.AutoTier); err != nil {
		return err
	}
	n = 0
	for _, b := range raw.Buckets {
		n += b.Count
	}
	if n != 6 {
		return fmt.Errorf("without rollups: Aggregate(AutoTier) counts %d of the collector's 6 readings", n)
	}
	auto, err := s.Aggregate(ctx, sensor.Temperature, "living_room", from, to, time.Hour, sensor.AutoTier)
	if err != nil {
		return err
	}
	n = 0
	for _, b := range auto.Buckets {
		n += b.Count
	}
	if n != 6 {
		return diverge("Aggregate(AutoTier) counts %d of the collector's 6 readings", n)
	}
	return nil
}
