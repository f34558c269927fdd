// Package sensor stores sensor time series in Redis in the sensor
// collector's layout (motion events, temperature and illuminance, and
// readings of any other type), kept for a retention window, with discovery,
// server-side queries and minute/hour rollups. With hash tags off the keys
// are byte for byte the collector's, so its readers share them.
//
//	sensors, err := sensor.New(rdb) // WithNamespace(keys.Namespace{NoHashTags: true}) for the collector's exact keys
//	...
//	_, err = sensors.Ingest(ctx, sensor.MotionReading("study", "binary_sensor.motion_study", true, seq, at))
//	occupied, err := sensors.MotionWithin(ctx, "study", 10*time.Minute)
//	t, err := sensors.Current(ctx, sensor.Temperature, "living_room")
//	week, err := sensors.Aggregate(ctx, sensor.Temperature, "living_room", from, to, time.Hour, sensor.AutoTier) // the hour tier
//
// The MQTT collector (topics automation/raw/{type}/{location} to batches
// of readings) is the sub-module github.com/redschema/redschema/sensor/mqtt,
// so that importing this package never brings in an MQTT client.
//
// # Guarantees
//
//   - One round trip per operation: each write and each query is one Lua
//     script on keys that share the location's hash tag (single-slot); a
//     write pipelines a small second one on the locations index.
//   - Server time decides what is kept: the retention cut, the far-future
//     check and the motion queries read the server's TIME.
//   - Bounded memory: every write trims what it grows and sets the TTL to
//     the retention; no KEYS (discovery reads an index; Reindex, the
//     admin repair that rebuilds it from readings the collector's own
//     service wrote, SCANs about 1,000 keys a call).
//   - Idempotent under retry: every reading carries an ID (with
//     WithoutReadingIDs, the collector's exact members, its bytes
//     identify it), so a resent write reports its first outcome and
//     stores nothing twice.
//   - The rollups never disagree with the raw readings: the same script
//     writes both.
//   - Late readings (older than the retention) are dropped; duplicates
//     follow the DuplicatePolicy.
//   - A failover can lose the last writes; a lost reading is simply absent.
//   - Errors: ErrInvalid (before anything is written), ErrNotFound,
//     ErrTooMany, ErrTruncated; keys.ErrCorrupt names a key this package
//     did not write; a network failure is returned as such.
//   - Deadlines: New refuses a go-redis client without
//     ContextTimeoutEnabled.
//
// # Keys
//
//	Key pattern                                  Type  TTL                                                                                   Purpose
//	meta:motion:{{location}}                     HASH  1d (retention, refreshed by every "on" event)                                         lastMotionTime: Unix ms of the latest "on" event
//	meta:{sensor_type}:{{location}}              HASH  1d (retention, refreshed by every write)                                              last_update (Unix ms), sensor_type, location of a generic sensor
//	sensor-compact:{sensor_type}:{{location}}    ZSET  1d (retention; chunks older than it are trimmed by every write)                       WithCompactEncoding: chunks of 64 readings (time, value, id) in time order, a late reading in the chunk of its time, scored by their first reading's Unix ms
//	sensor-index:locations                       ZSET  1d (retention + 1 min after the newest entry; older entries trimmed by every update)  discovery: location -> Unix ms of a reading less than a minute older than its newest (every write records a missing location)
//	sensor-index:types:{{location}}              ZSET  1d (retention; entries older than it are trimmed by every write)                      discovery: sensor type -> Unix ms of its newest reading in the location
//	sensor-rollup:1h:{sensor_type}:{{location}}  ZSET  90d (hour tier retention (WithRollups); older buckets trimmed by every write)         per-hour aggregates scored by bucket start: count, sum, min, max, first, last
//	sensor-rollup:1m:{sensor_type}:{{location}}  ZSET  7d (minute tier retention (WithRollups); older buckets trimmed by every write)        per-minute aggregates scored by bucket start: count, sum, min, max, first, last
//	sensor:environmental:{{location}}            ZSET  1d (retention; members older than it are trimmed by every write)                      temperature and illuminance readings scored by Unix ms (JSON; unit and entity_id when known; id unless WithoutReadingIDs)
//	sensor:motion:{{location}}                   ZSET  1d (retention; members older than it are trimmed by every write)                      motion events scored by Unix ms; JSON timestamp, state, entity_id and sequence (when known), collected_at, id (unless WithoutReadingIDs)
//	sensor:{sensor_type}:{{location}}            LIST  1d (retention; capped at 1000 entries (WithListCap))                                  readings of any other type, newest first (JSON data, original_topic when known, timestamp, collected_at, id unless WithoutReadingIDs)
//
// The long form (readings, duplicates, queries, rollups, the compact
// encoding, how the sensor collector's layout maps and what it fixes,
// limits) is https://github.com/redschema/redschema/blob/main/docs/sensor.md.
package sensor
