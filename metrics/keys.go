package metrics

import (
	"sync"
	"time"

	"github.com/redschema/redschema/internal/slottag"
	"github.com/redschema/redschema/keys"
)

// Lifetimes of the keys this package writes.
const (
	// counterTTL is the lifetime of the counter and histogram keys after
	// their last flush (the AI platform's 300s, docs/ai-platform.md).
	counterTTL = 300 * time.Second
	// gaugeTTL is the lifetime of the gauge keys after their last flush
	// (the AI platform's 60s, docs/ai-platform.md).
	gaugeTTL = 60 * time.Second
	// ledgerTTL is how long an instance's last flush sequence number is
	// remembered: a flush resent later than this could count twice (a
	// recorder gives up resending a batch older than ledgerTTL/2, see
	// Recorder.Flush).
	ledgerTTL = 24 * time.Hour
	// perSecondWindow is how many seconds of per-second request counts
	// are kept to derive requests:speed_per_second and its maximum.
	perSecondWindow = 60
	// pendingTTL is how long rollup input waits, after its last write, for
	// a Rollup to drain it.
	pendingTTL = 24 * time.Hour
)

// keyword for patterns' Owner and Area.
const owner = "metrics"

// The home-automation backend's request metrics of a cluster of app
// instances. They have no hash tag (its bytes, tags on or off), so each key is in
// its own cluster slot; the companion keys a flush updates with them
// (ledger, gauge parts, per-second counts) carry a tag chosen to hash to
// the same slot (see slotTag).
var (
	connCurrentKey = keys.MustCompile(keys.Pattern{Template: "connections:http:current", Type: keys.String,
		Persistent: "as in the home-automation layout: one key; the sum of the live instances' in-flight requests, rewritten by every flush (WithSharedKeys: moved by INCRBY of each instance's change, shared with other writers)",
		Owner:      owner, Area: keys.Metrics, Seed: "000 §1",
		Purpose: "current HTTP connections (in-flight requests) across all instances (INTEGER)"})
	connMaxKey = keys.MustCompile(keys.Pattern{Template: "connections:http:max_since_startup", Type: keys.String,
		Persistent: "as in the home-automation layout: one key, an atomic maximum",
		Owner:      owner, Area: keys.Metrics, Seed: "000 §1",
		Purpose: "highest connections:http:current seen since the deployment started (INTEGER)"})
	acceptedKey = keys.MustCompile(keys.Pattern{Template: "requests:accepted", Type: keys.String,
		Persistent: "as in the home-automation layout: one counter, never expires",
		Owner:      owner, Area: keys.Metrics, Seed: "000 §1",
		Purpose: "requests accepted (all requests but those refused: 429 and 503 by default) (INTEGER)"})
	totalKey = keys.MustCompile(keys.Pattern{Template: "requests:total", Type: keys.String,
		Persistent: "as in the home-automation layout: one counter, never expires",
		Owner:      owner, Area: keys.Metrics, Seed: "000 §1",
		Purpose: "requests across all instances and endpoints (INTEGER); loopback ones left out with WithoutLoopback"})
	speedKey = keys.MustCompile(keys.Pattern{Template: "requests:speed_per_second", Type: keys.String,
		Persistent: "as in the home-automation layout: one key, rewritten by every flush",
		Owner:      owner, Area: keys.Metrics, Seed: "000 §1",
		Purpose: "requests in the last complete second across all instances (INTEGER)"})
	maxSpeedKey = keys.MustCompile(keys.Pattern{Template: "requests:max_speed_per_second", Type: keys.String,
		Persistent: "as in the home-automation layout: one key, an atomic maximum",
		Owner:      owner, Area: keys.Metrics, Seed: "000 §1",
		Purpose: "highest requests:speed_per_second seen (INTEGER)"})
	endpointKey = keys.MustCompile(keys.Pattern{Template: "requests:endpoint:{endpoint}", Type: keys.String,
		Persistent: "as in the home-automation layout: bounded by the route templates and the cardinality cap (default 1000 + 1 overflow key, about 90 B each)",
		Owner:      owner, Area: keys.Metrics, Seed: "000 §1",
		Purpose: "requests per endpoint \"METHOD route\" (INTEGER)"})
	errorsKey = keys.MustCompile(keys.Pattern{Template: "errors:total", Type: keys.String,
		Persistent: "as in the home-automation layout: one counter, never expires",
		Owner:      owner, Area: keys.Metrics, Seed: "000 §2",
		Purpose: "responses with status >= 400 across all instances (INTEGER)"})
	endpointErrorsKey = keys.MustCompile(keys.Pattern{Template: "errors:endpoint:{endpoint}", Type: keys.String,
		Persistent: "as in the home-automation layout: bounded by the route templates and the cardinality cap (default 1000 + 1 overflow key, about 90 B each)",
		Owner:      owner, Area: keys.Metrics, Seed: "000 §2",
		Purpose: "responses with status >= 400 per endpoint \"METHOD route\" (INTEGER)"})
)

// The AI platform's TTL'd series of named metrics. The metric name is the hash
// tag, so every key of a metric is in one slot and one flush script
// updates them together.
var (
	counterKey = keys.MustCompile(keys.Pattern{Template: "metrics:counter:{metric_name}:{dimension}", Type: keys.String,
		TTL: counterTTL, TTLNote: "refreshed by every flush that adds to it", Tag: "metric_name",
		Owner: owner, Area: keys.Metrics, Seed: "001 §10",
		Purpose: "counter series: the cluster-wide count while the series is active (INTEGER); dimension = label values joined by '|'"})
	gaugeKey = keys.MustCompile(keys.Pattern{Template: "metrics:gauge:{metric_name}:{dimension}", Type: keys.String,
		TTL: gaugeTTL, TTLNote: "refreshed by every flush of an instance holding the gauge", Tag: "metric_name",
		Owner: owner, Area: keys.Metrics, Seed: "001 §10",
		Purpose: "gauge series: the live instances' contributions summed at the last flush, or a Latest gauge's latest Set by server time (INTEGER)"})
	histogramKey = keys.MustCompile(keys.Pattern{Template: "metrics:histogram:{metric_name}:{dimension}:{bucket}", Type: keys.String,
		TTL: counterTTL, TTLNote: "refreshed by every flush that adds to it", Tag: "metric_name",
		Owner: owner, Area: keys.Metrics, Seed: "001 §10",
		Purpose: "histogram series: observations in one bucket (upper bound, non-cumulative; \"+Inf\"), or \"sum\" / \"count\""})
	totalsKey = keys.MustCompile(keys.Pattern{Template: "metrics:totals:{metric_name}", Type: keys.Hash,
		TTL: counterTTL, TTLNote: "the metric's TTL (60s for a Latest gauge), refreshed by every flush", Tag: "metric_name",
		Owner: owner, Area: keys.Metrics,
		Purpose: "one metric's series in one hash (dimension, or dimension|bucket -> count; a Latest gauge: dimension -> \"value:stamp_ms\", its latest Set and that Set's server time), read by one HGETALL per metric per scrape; at most the cap + 1 fields"})
	endpointTotalsKey = keys.MustCompile(keys.Pattern{Template: "metrics:endpoint-totals:{metric_name}", Type: keys.Hash,
		Persistent: "bounded: two hashes (http_endpoint_requests, http_endpoint_errors) of at most the cap + 1 fields, as lasting as the home-automation layout's per-endpoint counters they sum", Tag: "metric_name",
		Owner: owner, Area: keys.Metrics,
		Purpose: "the home-automation layout's per-endpoint requests or errors in one hash (route template -> count), read by one HGETALL per scrape"})
)

// slotTag returns the {slot} of a companion key that serves keys in
// cluster slot s: the smallest decimal number whose CRC16 falls in s (the
// keys' names have always carried these, where other packages' slot keys
// use keys.SlotTag's base 36).
func slotTag(s int) string { return decimalSlotTags()[s] }

// decimalSlotTags is the table slotTag reads, built on first use.
var decimalSlotTags = sync.OnceValue(func() []string { return slottag.Table(keys.SlotCount, 10, keys.Slot) })

// Companion keys of a flush. {slot} is a short tag that hashes to the
// cluster slot of the keys it serves (slotTag), so a flush script touches
// one slot.
var (
	ledgerKey = keys.MustCompile(keys.Pattern{Template: "metrics:ledger:{slot}", Type: keys.Hash,
		TTL: ledgerTTL, TTLNote: "refreshed by every flush; fields of instances silent for a day are trimmed by the flush", Tag: "slot",
		Owner: owner, Area: keys.Metrics,
		Purpose: "instance ID -> \"seq:ms\": the last flush batch applied to this slot, so a resent flush never counts twice"})
	partsKey = keys.MustCompile(keys.Pattern{Template: "metrics:parts:{slot}:{gauge}", Type: keys.Hash,
		TTL: 10 * time.Second, TTLNote: "the heartbeat TTL (default 10s), refreshed by every flush; expired fields are dropped by the flush or read that finds them; connections:http:current's 1d WithSharedKeys, so that a flush finds a dead instance's count to take back", Tag: "slot",
		Owner: owner, Area: keys.Metrics,
		Purpose: "Sum gauge contributions: \"dimension|instance\" -> \"value:expires_ms:written_ms\", summed on read (a Latest gauge's, as earlier versions wrote them, are still read)"})
	perSecondKey = keys.MustCompile(keys.Pattern{Template: "metrics:persec:{slot}:{gauge}", Type: keys.Hash,
		TTL: 2 * perSecondWindow * time.Second, TTLNote: "refreshed by every flush; fields older than 60s are trimmed by the flush", Tag: "slot",
		Owner: owner, Area: keys.Metrics,
		Purpose: "requests per second: Unix second -> count, for speed_per_second and its maximum"})
)

// Rollup keys (see Rollup), tagged by metric like the series they drain.
var (
	pendingKey = keys.MustCompile(keys.Pattern{Template: "metrics:rollup:{metric_name}:pending", Type: keys.Hash,
		TTL: pendingTTL, TTLNote: "refreshed by every flush; at most the cap + 1 fields", Tag: "metric_name",
		Owner: owner, Area: keys.Metrics,
		Purpose: "rollup input: what the flushes added per series since the last drain"})
	rollupStateKey = keys.MustCompile(keys.Pattern{Template: "metrics:rollup:{metric_name}:state", Type: keys.Hash,
		TTL: 90 * 24 * time.Hour, TTLNote: "the longest tier retention, refreshed by every drain", Tag: "metric_name",
		Owner: owner, Area: keys.Metrics,
		Purpose: "rollup lease (holder, expiry) and per-tier watermarks: last bucket closed, last bucket the sink took"})
	rollupOpenKey = keys.MustCompile(keys.Pattern{Template: "metrics:rollup:{metric_name}:open", Type: keys.Hash,
		TTL: 90 * 24 * time.Hour, TTLNote: "the longest tier retention, refreshed by every drain", Tag: "metric_name",
		Owner: owner, Area: keys.Metrics,
		Purpose: "rollup: the open hour and day buckets (\"tier|field\" -> sum) until they close"})
	rollupTierKeys = [nTiers]*keys.Template{
		Minute: keys.MustCompile(keys.Pattern{Template: "metrics:rollup:{metric_name}:minute", Type: keys.Stream,
			TTL: 8 * time.Hour, TTLNote: "retention (default 8h): trimmed by MINID in the drain, never below what the sink has not taken", Tag: "metric_name",
			Owner: owner, Area: keys.Metrics,
			Purpose: "closed minute buckets, entry ID = bucket start ms; fields series -> sum"}),
		Hour: keys.MustCompile(keys.Pattern{Template: "metrics:rollup:{metric_name}:hour", Type: keys.Stream,
			TTL: 7 * 24 * time.Hour, TTLNote: "retention (default 7d), as the minute tier", Tag: "metric_name",
			Owner: owner, Area: keys.Metrics,
			Purpose: "closed hour buckets, entry ID = bucket start ms"}),
		Day: keys.MustCompile(keys.Pattern{Template: "metrics:rollup:{metric_name}:day", Type: keys.Stream,
			TTL: 90 * 24 * time.Hour, TTLNote: "retention (default 90d), as the minute tier", Tag: "metric_name",
			Owner: owner, Area: keys.Metrics,
			Purpose: "closed day buckets (UTC), entry ID = bucket start ms"}),
	}
)

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	return keys.Schema{
		Templates: []*keys.Template{connCurrentKey, connMaxKey, acceptedKey, totalKey, speedKey, maxSpeedKey, endpointKey, errorsKey, endpointErrorsKey, counterKey, gaugeKey, histogramKey, totalsKey, endpointTotalsKey, ledgerKey, partsKey, perSecondKey, pendingKey, rollupStateKey, rollupOpenKey, rollupTierKeys[Minute], rollupTierKeys[Hour], rollupTierKeys[Day]},
		Decoders:  decoders(),
	}
}
