// Package sensor stores sensor time series in Redis in seed 003's layout
// (the collector agent's schema): motion events, temperature and
// illuminance, and readings of any other type, kept for a retention
// window, with discovery, server-side queries and minute/hour rollups.
//
//	sensors, err := sensor.New(rdb) // WithNamespace(keys.Namespace{NoHashTags: true}) for the seed's exact keys
//	...
//	_, err = sensors.Ingest(ctx, sensor.MotionReading("study", "binary_sensor.motion_study", true, seq, at))
//	occupied, err := sensors.MotionWithin(ctx, "study", 10*time.Minute)
//	t, err := sensors.Current(ctx, sensor.Temperature, "living_room")
//	week, err := sensors.Aggregate(ctx, sensor.Temperature, "living_room", from, to, time.Hour) // the hour tier
//
// The MQTT collector (topics automation/raw/{type}/{location} to
// batches of readings) is the sub-module
// github.com/redschema/redschema/sensor/mqtt, so that importing this
// package never brings in an MQTT client.
//
// # Guarantees
//
//   - One round trip per operation: each write and each query is one Lua
//     script whose keys share the location's hash tag, so it is atomic
//     and single-slot on a cluster. A write that refreshes the locations
//     index (at most once a minute per location and client) pipelines a
//     second, single-key script with it: still one round trip.
//     IngestBatch sends up to MaxBatch readings as one pipeline, which
//     go-redis splits per node on a cluster.
//   - Server time: the retention cut, the far-future check and the motion
//     queries read the server's TIME, so application clocks never decide
//     what is kept. Ingest also refuses a far-future timestamp by the
//     local clock before sending anything.
//   - Bounded memory: every write trims what it grows (the sorted sets
//     and the discovery index to the retention, the generic list to its
//     cap and to the retention, each rollup tier to its own retention)
//     and sets the keys' TTL to the retention after their newest reading
//     (never shortening it). No KEYS, no SCAN: discovery reads an index
//     the writes maintain.
//   - Idempotent under retry: every reading carries an ID (drawn by
//     Ingest when the caller gives none), stored in its member. go-redis
//     resends a write whose reply was lost (a whole pipeline, for
//     IngestBatch); the script then finds the ID and reports the first
//     outcome without storing or counting the reading twice.
//   - Typed errors: ErrInvalid for bad input (before anything is
//     written: see Reading and the option bounds; a value that cannot be
//     a key segment also matches keys.ErrInvalidKey), ErrNotFound,
//     ErrTooMany (a raw scan past MaxScan), ErrTruncated (with the
//     readings), keys.ErrCorrupt naming the key for data this package did
//     not write (a member that is not a reading, a lastMotionTime that is
//     not Unix ms, a rollup bucket or compact chunk that does not parse,
//     a key of the wrong type; writes check every key before writing
//     anything). A network failure, a timeout or a cluster error is
//     returned as such, never as an outcome. Every error names the
//     operation and the key; redis.Nil never escapes.
//   - Failover: Redis replicates asynchronously, so a failover can lose
//     the last writes; a lost reading is simply absent (the rollups of a
//     write are lost with it, as they are in the same script).
//   - Deadlines: create the client with ContextTimeoutEnabled: true, or
//     go-redis ignores context deadlines while a server hangs (New
//     refuses a client without it).
//
// # Keys
//
//	Key pattern                                  Type  TTL                                                                             Purpose
//	meta:motion:{{location}}                     HASH  1d (retention, refreshed by every "on" event)                                   lastMotionTime: Unix ms of the latest "on" event
//	meta:{sensor_type}:{{location}}              HASH  1d (retention, refreshed by every write)                                        last_update (Unix ms), sensor_type, location of a generic sensor
//	sensor-compact:{sensor_type}:{{location}}    ZSET  1d (retention; chunks older than it are trimmed by every write)                 WithCompactEncoding: chunks of up to 64 readings (time, value, id) scored by their first reading's Unix ms
//	sensor-index:locations                       ZSET  1d (retention; entries older than it are trimmed by every update)               discovery: location -> Unix ms of its newest reading (refreshed at most once a minute per location and client)
//	sensor-index:types:{{location}}              ZSET  1d (retention; entries older than it are trimmed by every write)                discovery: sensor type -> Unix ms of its newest reading in the location
//	sensor-rollup:1h:{sensor_type}:{{location}}  ZSET  90d (hour tier retention (WithRollups); older buckets trimmed by every write)   per-hour aggregates scored by bucket start: count, sum, min, max, first, last
//	sensor-rollup:1m:{sensor_type}:{{location}}  ZSET  7d (minute tier retention (WithRollups); older buckets trimmed by every write)  per-minute aggregates scored by bucket start: count, sum, min, max, first, last
//	sensor:environmental:{{location}}            ZSET  1d (retention; members older than it are trimmed by every write)                temperature and illuminance readings scored by Unix ms (JSON)
//	sensor:motion:{{location}}                   ZSET  1d (retention; members older than it are trimmed by every write)                motion events scored by Unix ms; JSON timestamp, state, entity_id, sequence, collected_at, id
//	sensor:{sensor_type}:{{location}}            LIST  1d (retention; capped at 1000 entries (WithListCap))                            readings of any other type, newest first (JSON data, original_topic, timestamp, collected_at, id)
//
// # Compatibility with existing layouts
//
// The keys, types, scores, TTLs and JSON fields are seed 003's. With
// keys.Namespace{NoHashTags: true} the keys are byte for byte the seed's
// (sensor:motion:study, meta:motion:study, sensor:environmental:living_room,
// sensor:pressure:kitchen, meta:pressure:kitchen), so the seed's
// collector and its readers (the occupancy, light and behaviour agents'
// ZRANGEBYSCORE, ZREVRANGEBYSCORE, HGET, LINDEX, LRANGE) share them with
// this package; with tags on (the default) the location is the hash tag:
// sensor:motion:{study}. Members keep the seed's fields in the seed's
// order (timestamp as "2025-01-01T12:00:00.000Z", collected_at in Unix
// ms, temperature_unit, original_topic, ...); this package reads the
// seed's own members as well. What it fixes:
//
//   - Identical readings: the seed stored two readings with identical JSON
//     as one ZSET member (the second write was lost). Every member ends
//     with the reading's ID ("id": 16 hex digits by default), so two
//     readings are two members; seed readers decode the JSON as before
//     and ignore the field. The same ID makes a resent write recognisable.
//   - Discovery: the seed listed a location's sensor types with KEYS
//     meta:*:{location}, which blocks Redis and misses motion, temperature
//     and illuminance (they have no meta:{type} hash). Every write records
//     its type in sensor-index:types:{location} (type -> newest reading),
//     and its location in sensor-index:locations, trimmed to the retention
//     and expiring with it. Types and Locations read them in one call.
//   - Retention: the seed trimmed its sorted sets on every write but its
//     lists only by length; the generic list is also trimmed by age, and
//     every query ignores readings older than the retention even where no
//     write has trimmed them yet, so the 24 h window is exact.
//   - lastMotionTime only moves forward: a late "on" event no longer sets
//     it back.
//   - "environmental" is refused as a sensor type: the seed's routing
//     would have written a list into the temperature/illuminance sorted
//     set's key. "motion", "temperature" and "illuminance" always go to
//     their sorted sets.
//   - Far-future timestamps, NaN and infinite values, empty or malformed
//     types and locations are refused (the seed stored them).
//   - New keys: the discovery indexes, the rollup tiers
//     (sensor-rollup:1m:{sensor_type}:{location},
//     sensor-rollup:1h:{sensor_type}:{location}) and, only with
//     WithCompactEncoding, sensor-compact:{sensor_type}:{location}. None
//     of them overlaps the seed's key shapes (see the note on the
//     registry below).
//
// The registry lists sensor:motion:{location} and
// sensor:environmental:{location} beside sensor:{sensor_type}:{location},
// and meta:motion:{location} beside meta:{sensor_type}:{location}: they
// are the seed's own aliases. This package never writes a list under the
// motion or environmental names (motion readings go to the sorted set;
// "environmental" is not a type), so the shapes never hold each other's
// data.
//
// # Readings
//
// A Reading is typed by its Type: MotionReading, TemperatureReading,
// IlluminanceReading and GenericReading build them. Times are stored to
// the millisecond (the seed's scores). Names are bounded: a type is 1 to
// 64 bytes of a-z, 0-9, '_' and '-'; a location 1 to 64 bytes of letters,
// digits, '_', '-' and '.'; WithTypes and WithLocations restrict them to
// allow-lists. A generic reading's Data is any JSON object up to
// MaxDataLen; its numeric "value" is what the rollups aggregate.
//
// # Duplicates and late readings
//
// A reading whose time is older than the retention (by the server clock)
// is dropped: Outcome Late, nothing written, nothing counted. A reading
// of the same sensor (type, location and entity ID) at the same
// millisecond as a stored one follows the client's DuplicatePolicy:
// KeepBoth (default) stores both, LastWins replaces, FirstWins drops the
// new one (Outcome Duplicate). The sorted sets find such readings by
// score, exactly; a generic list is searched among its newest 32 entries
// (plus as many as a batch writes into it), the same depth at which a
// resent write recognises itself.
//
// # Queries
//
// Latest (newest n), Current (newest one, ErrNotFound when none), Range
// ([from, to], oldest first, at most a limit, ErrTruncated beyond), Since
// (from t on), SinceMotion (how long ago the last "on" was, by the server
// clock), MotionWithin (an "on" in the last window, exclusive like the
// seed's "(now-600000"), Types and Locations. Each is one script that
// reads on the server and returns only what was asked; temperature and
// illuminance, which share a sorted set, are told apart on the server.
//
// # Rollups
//
// Every write of a reading with a value also folds it into its minute
// and hour buckets (count, sum, min, max, first, last), in the same
// script, so the rollups never disagree with the raw readings they
// summarise. Each tier keeps its own retention (WithRollups; 7 and 90
// days by default; WithoutRollups turns them off). Aggregate returns
// count, sum, min, max, avg, first and last per bucket of any width, and
// picks the coarsest tier whose bucket divides the width and whose
// retention covers the range, else the raw readings (WithTier forces
// one): an hourly trend over a week reads 168 hour buckets, never a raw
// reading. A motion event's value is 1 for "on" and 0 for "off".
//
// # Compact encoding
//
// WithCompactEncoding stores each type's raw readings in
// sensor-compact:{sensor_type}:{location}: a sorted set of chunks of up
// to 64 readings, each a few bytes ("offset,value,id"), instead of one
// JSON member each. It takes a small fraction of the memory of the
// seed's JSON (see bench/), keeps each reading's time, value (motion: its
// state), a short ID, and the unit and entity ID of the chunk's first
// reading, and drops the rest (sequence, collected_at, topic, a generic
// payload's other fields). Seed readers cannot read it; the meta hashes,
// the index and the rollups are the same as with the seed's encoding, and
// the queries answer the same. It is opt-in: the default is byte-compatible.
package sensor
