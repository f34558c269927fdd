package sensor

import (
	"time"

	"github.com/redschema/redschema/keys"
)

// defaultRetention is how long raw readings are kept unless WithRetention
// says otherwise (the sensor collector's 24 hours, trimmed on every
// write, and the same TTL on every key).
const defaultRetention = 24 * time.Hour

// Default retention of the rollup tiers (WithRollups).
const (
	defaultMinuteRetention = 7 * 24 * time.Hour
	defaultHourRetention   = 90 * 24 * time.Hour
)

// The seed's keys. Every key of one location carries the location as its
// hash tag, so one reading's keys share a slot on a cluster.
var (
	motionKey = keys.MustCompile(keys.Pattern{
		Template: "sensor:motion:{location}",
		Type:     keys.ZSet,
		TTL:      defaultRetention,
		TTLNote:  "retention; members older than it are trimmed by every write",
		Tag:      "location",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "motion events scored by Unix ms; JSON timestamp, state, entity_id and sequence (when known), collected_at, id (unless WithoutReadingIDs)",
		Seed:     "003",
	})
	motionMetaKey = keys.MustCompile(keys.Pattern{
		Template: "meta:motion:{location}",
		Type:     keys.Hash,
		TTL:      defaultRetention,
		TTLNote:  "retention, refreshed by every \"on\" event",
		Tag:      "location",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "lastMotionTime: Unix ms of the latest \"on\" event",
		Seed:     "003",
	})
	envKey = keys.MustCompile(keys.Pattern{
		Template: "sensor:environmental:{location}",
		Type:     keys.ZSet,
		TTL:      defaultRetention,
		TTLNote:  "retention; members older than it are trimmed by every write",
		Tag:      "location",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "temperature and illuminance readings scored by Unix ms (JSON; unit and entity_id when known; id unless WithoutReadingIDs)",
		Seed:     "003",
	})
	genericKey = keys.MustCompile(keys.Pattern{
		Template: "sensor:{sensor_type}:{location}",
		Type:     keys.List,
		TTL:      defaultRetention,
		TTLNote:  "retention; capped at 1000 entries (WithListCap)",
		Tag:      "location",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "readings of any other type, newest first (JSON data, original_topic when known, timestamp, collected_at, id unless WithoutReadingIDs)",
		Seed:     "003",
	})
	genericMetaKey = keys.MustCompile(keys.Pattern{
		Template: "meta:{sensor_type}:{location}",
		Type:     keys.Hash,
		TTL:      defaultRetention,
		TTLNote:  "retention, refreshed by every write",
		Tag:      "location",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "last_update (Unix ms), sensor_type, location of a generic sensor",
		Seed:     "003",
	})
)

// The keys this package adds to the seed's layout.
var (
	typesKey = keys.MustCompile(keys.Pattern{
		Template: "sensor-index:types:{location}",
		Type:     keys.ZSet,
		TTL:      defaultRetention,
		TTLNote:  "retention; entries older than it are trimmed by every write",
		Tag:      "location",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "discovery: sensor type -> Unix ms of its newest reading in the location",
	})
	locationsKey = keys.MustCompile(keys.Pattern{
		Template: "sensor-index:locations",
		Type:     keys.ZSet,
		TTL:      defaultRetention,
		TTLNote:  "retention + 1 min after the newest entry; older entries trimmed by every update",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "discovery: location -> Unix ms of a reading less than a minute older than its newest (every write records a missing location)",
	})
	minuteKey = keys.MustCompile(keys.Pattern{
		Template: "sensor-rollup:1m:{sensor_type}:{location}",
		Type:     keys.ZSet,
		TTL:      defaultMinuteRetention,
		TTLNote:  "minute tier retention (WithRollups); older buckets trimmed by every write",
		Tag:      "location",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "per-minute aggregates scored by bucket start: count, sum, min, max, first, last",
	})
	hourKey = keys.MustCompile(keys.Pattern{
		Template: "sensor-rollup:1h:{sensor_type}:{location}",
		Type:     keys.ZSet,
		TTL:      defaultHourRetention,
		TTLNote:  "hour tier retention (WithRollups); older buckets trimmed by every write",
		Tag:      "location",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "per-hour aggregates scored by bucket start: count, sum, min, max, first, last",
	})
	compactKey = keys.MustCompile(keys.Pattern{
		Template: "sensor-compact:{sensor_type}:{location}",
		Type:     keys.ZSet,
		TTL:      defaultRetention,
		TTLNote:  "retention; chunks older than it are trimmed by every write",
		Tag:      "location",
		Owner:    "sensor",
		Area:     keys.Sensors,
		Purpose:  "WithCompactEncoding: chunks of 64 readings (time, value, id) in time order, a late reading in the chunk of its time, scored by their first reading's Unix ms",
	})
)

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	return keys.Schema{
		Templates: []*keys.Template{motionKey, motionMetaKey, envKey, genericKey, genericMetaKey, typesKey, locationsKey, minuteKey, hourKey, compactKey},
		Decoders:  decoders(),
	}
}
