// Package metrics keeps exact cluster-wide counters, gauges and histograms
// in Redis with no network call on the request path: recording is an
// atomic add in memory, and a flusher sends every delta in one pipeline
// per interval. It writes seed 000's request metrics and seed 001's series.
//
//	rec, err := metrics.New(rdb, metrics.WithNamespace(keys.Namespace{Prefix: "ha:"}))
//	...
//	defer rec.Close(ctx)                                  // flushes what is left
//	handler = metrics.Middleware(rec)(mux)                // seed 000's keys, per route template
//	tokens, _ := rec.Counter("ai_tokens_used", "model", "type")
//	tokens.Add(420, "gpt-4", "prompt")                    // an atomic add
//	rd, _ := metrics.NewReader(rdb, rec.Definitions(), metrics.WithNamespace(ns))
//	snap, _ := rd.Read(ctx)                               // cluster-wide values, one pipeline
//
// # Guarantees
//
//   - Zero round trips per recording: Counter, Gauge, Histogram and the
//     HTTP middleware only touch in-memory atomics. The flusher sends
//     everything recorded since the last flush in one pipeline per
//     interval (default 1s; one round trip per cluster master, a second
//     only right after a server lost its scripts) and on Close; an idle
//     recorder without gauges sends nothing.
//   - Exact totals across instances: each flush is a batch with a
//     sequence number of its instance. On every cluster slot it touches,
//     one script applies the batch's operations and records the sequence
//     number in the slot's ledger (metrics:ledger:{slot}), atomically; a
//     batch resent by go-redis after a lost reply finds its number there
//     and changes nothing. A batch that fails is kept and resent unchanged
//     (the slots that had it answer "duplicate"), while new deltas wait in
//     the atomics, so a failed flush loses nothing and a resent one never
//     counts twice. The ledger remembers an instance for LedgerTTL (24h)
//     after its last flush: a batch still undelivered after that could
//     count twice on a slot that had applied it.
//   - Gauges survive crashes: each instance writes its own contribution
//     with an expiry (the heartbeat TTL, default 10s) refreshed by every
//     flush, and the value is computed from the live contributions, on
//     every flush and on every read. An instance killed without Close
//     stops counting within its heartbeat TTL; Close withdraws it at once.
//   - Atomic maxima: connections:http:max_since_startup and
//     requests:max_speed_per_second only grow, by a compare in the flush
//     script.
//   - Bounded memory: the cardinality cap (WithMaxSeries, default 1000 per
//     metric) bounds the series a recorder holds and writes; values beyond
//     it go to one overflow series. Seed 001's keys expire (counters and
//     histograms 300s, gauges 60s after their last flush); seed 000's keys
//     are persistent as the seed says, bounded by the route templates and
//     the cap; every other key has a TTL (see Keys).
//   - Errors: ErrInvalid for bad input, before anything is written;
//     ErrClosed after Close; keys.ErrCorrupt naming the key for data this
//     package did not write (a flush skips such a key, reports it through
//     WithErrorHandler and Stats.Corrupt, and applies the rest); network
//     errors as they are. Flush errors of the background flusher go to
//     WithErrorHandler; their deltas are kept.
//   - Deadlines: create the client with ContextTimeoutEnabled: true (New
//     refuses one without it). Ring clients are refused: a flush script
//     needs the cluster's slots.
//
// # Keys
//
//	Key pattern                                             Type    TTL                                                                                                                                                               Purpose
//	connections:http:current                                STRING  none (seed 000: one key; the sum of the live instances' in-flight requests, rewritten by every flush)                                                             current HTTP connections (in-flight requests) across all instances (INTEGER)
//	connections:http:max_since_startup                      STRING  none (seed 000: one key, an atomic maximum)                                                                                                                       highest connections:http:current seen since the deployment started (INTEGER)
//	errors:endpoint:{endpoint}                              STRING  none (seed 000: bounded by the route templates and the cardinality cap (default 1000 + 1 overflow key, about 90 B each))                                          responses with status >= 400 per endpoint "METHOD route" (INTEGER)
//	errors:total                                            STRING  none (seed 000: one counter, never expires)                                                                                                                       responses with status >= 400 across all instances (INTEGER)
//	metrics:counter:{{metric_name}}:{dimension}             STRING  5m (refreshed by every flush that adds to it)                                                                                                                     counter series: the cluster-wide count while the series is active (INTEGER); dimension = label values joined by '|'
//	metrics:endpoint-totals:{{metric_name}}                 HASH    none (bounded: two hashes (http_endpoint_requests, http_endpoint_errors) of at most the cap + 1 fields, as lasting as seed 000's per-endpoint counters they sum)  seed 000's per-endpoint requests or errors in one hash (route template -> count), read by one HGETALL per scrape
//	metrics:gauge:{{metric_name}}:{dimension}               STRING  1m (refreshed by every flush of an instance holding the gauge)                                                                                                    gauge series: the live instances' contributions summed (or the latest Set) at the last flush (INTEGER)
//	metrics:histogram:{{metric_name}}:{dimension}:{bucket}  STRING  5m (refreshed by every flush that adds to it)                                                                                                                     histogram series: observations in one bucket (upper bound, non-cumulative; "+Inf"), or "sum" / "count"
//	metrics:ledger:{{slot}}                                 HASH    1d (refreshed by every flush; fields of instances silent for a day are trimmed by the flush)                                                                      instance ID -> "seq:ms": the last flush batch applied to this slot, so a resent flush never counts twice
//	metrics:parts:{{slot}}:{gauge}                          HASH    10s (the heartbeat TTL (default 10s), refreshed by every flush; expired fields are dropped by the flush or read that finds them)                                  gauge contributions: "dimension|instance" -> "value:expires_ms:written_ms", summed on read
//	metrics:persec:{{slot}}:{gauge}                         HASH    2m (refreshed by every flush; fields older than 60s are trimmed by the flush)                                                                                     requests per second: Unix second -> count, for speed_per_second and its maximum
//	metrics:rollup:{{metric_name}}:day                      STREAM  90d (retention (default 90d), as the minute tier)                                                                                                                 closed day buckets (UTC), entry ID = bucket start ms
//	metrics:rollup:{{metric_name}}:hour                     STREAM  7d (retention (default 7d), as the minute tier)                                                                                                                   closed hour buckets, entry ID = bucket start ms
//	metrics:rollup:{{metric_name}}:minute                   STREAM  8h (retention (default 8h): trimmed by MINID in the drain, never below what the sink has not taken)                                                               closed minute buckets, entry ID = bucket start ms; fields series -> sum
//	metrics:rollup:{{metric_name}}:open                     HASH    90d (the longest tier retention, refreshed by every drain)                                                                                                        rollup: the open hour and day buckets ("tier|field" -> sum) until they close
//	metrics:rollup:{{metric_name}}:pending                  HASH    1d (refreshed by every flush; at most the cap + 1 fields)                                                                                                         rollup input: what the flushes added per series since the last drain
//	metrics:rollup:{{metric_name}}:state                    HASH    90d (the longest tier retention, refreshed by every drain)                                                                                                        rollup lease (holder, expiry) and per-tier watermarks: last bucket closed, last bucket the sink took
//	metrics:totals:{{metric_name}}                          HASH    5m (the metric's TTL, refreshed by every flush)                                                                                                                   one metric's series in one hash (dimension, or dimension|bucket -> count), read by one HGETALL per metric per scrape; at most the cap + 1 fields
//	requests:accepted                                       STRING  none (seed 000: one counter, never expires)                                                                                                                       requests accepted (all requests but those refused: 429 and 503 by default) (INTEGER)
//	requests:endpoint:{endpoint}                            STRING  none (seed 000: bounded by the route templates and the cardinality cap (default 1000 + 1 overflow key, about 90 B each))                                          requests per endpoint "METHOD route" (INTEGER)
//	requests:max_speed_per_second                           STRING  none (seed 000: one key, an atomic maximum)                                                                                                                       highest requests:speed_per_second seen (INTEGER)
//	requests:speed_per_second                               STRING  none (seed 000: one key, rewritten by every flush)                                                                                                                requests in the last complete second across all instances (INTEGER)
//	requests:total                                          STRING  none (seed 000: one counter, never expires)                                                                                                                       non-localhost requests across all instances and endpoints (INTEGER)
//
// # Compatibility with existing layouts
//
// Seed 000 (§1-2, a Node service's request metrics under REDIS_KEY_PREFIX
// "ha:"): connections:http:current, connections:http:max_since_startup,
// requests:accepted, requests:total, requests:speed_per_second,
// requests:max_speed_per_second, requests:endpoint:{METHOD path},
// errors:total and errors:endpoint:{METHOD path} are written with the
// seed's bytes (WithNamespace(keys.Namespace{Prefix: "ha:"})), as INTEGER
// strings without TTL, so the seed's readers keep working. Changes:
//
//   - Endpoints are route templates ("PUT /api/forum/questions/{id}"), not
//     raw paths ("PUT /api/forum/questions/123"): raw paths made one
//     persistent key per ID. Characters the keys package escapes in a
//     segment are percent-encoded, so "{id}" is written "%7Bid%7D" (a
//     brace would make a cluster hash only the text inside it).
//   - requests:total counts non-localhost requests as the seed says;
//     requests:accepted counts every request the service did not refuse
//     (429 and 503 by default, WithRefused); errors count statuses >= 400.
//   - connections:http:current is the sum of the live instances'
//     contributions, rewritten by every flush: the seed's INCR on connect
//     and DECR on close drifts forever when an instance dies in between.
//     It counts in-flight requests (what a middleware sees).
//   - requests:speed_per_second is the cluster's count of the last
//     complete second (a second is complete once every instance flushed
//     it: now minus the interval and one second), from per-second counts
//     in metrics:persec:{slot}:{key}; the seed does not say how instances
//     share it. Seconds are the instances' clocks.
//   - The seed writes with one INCRBY per request; here one pipeline per
//     interval carries everything.
//
// Seed 001 (§10, database 7 "Metrics"): metrics:counter:{metric_name}:{dimension}
// (TTL 300s), metrics:gauge:{metric_name}:{dimension} (TTL 60s) and
// metrics:histogram:{metric_name}:{bucket} (TTL 300s), with its common
// metrics (CommonMetrics). Changes:
//
//   - The metric name is the hash tag (metrics:counter:{{api_requests_total}}:...),
//     so a metric's keys share a cluster slot; keys.Namespace.NoHashTags
//     gives the seed's bytes on a standalone server.
//   - A dimension is the label values joined by '|' (SplitDimension), "-"
//     without labels ("/api/users|GET|200").
//   - Histogram keys carry the dimension the seed's table gives
//     api_latency_ms (endpoint) but its key pattern has no room for:
//     metrics:histogram:{metric_name}:{dimension}:{bucket}, bucket being an
//     upper bound in the metric's unit ("25", "+Inf", non-cumulative), or
//     "sum" and "count". The Prometheus collector shows api_latency_ms in
//     seconds (api_latency_seconds) with cumulative buckets.
//   - TTLs are refreshed by each flush that writes a series, so an active
//     series never expires and an idle one leaves after its TTL.
//   - "Aggregated every 5 minutes to permanent storage": see Rollup below.
//   - Every metric also keeps its series in one hash,
//     metrics:totals:{metric_name}, so a reader gets all of them with one
//     HGETALL (no SCAN, no KEYS).
//
// # Flushing
//
// Recorder.Flush (and the flusher every interval) swaps every atomic to
// zero and groups the operations by cluster slot: seed 001's keys by
// metric (one script per metric), seed 000's keys one slot each (they have
// no tag). The companion keys a script needs next to a seed 000 key (its
// ledger, gauge parts, per-second counts) are tagged with a short string
// chosen to hash to that key's slot, so every script is single-slot and
// the seed's keys keep their bytes. On a standalone server one script
// carries the whole batch.
//
// # Reading
//
// Reader.Read returns seed 000's values, each endpoint's counts, and every
// series of the metrics it was given, in one pipeline: GET for seed 000's
// single keys, HGETALL of each metric's totals hash, and a read-only
// script per gauge that sums the live contributions. The metrics/prom
// module (its own go.mod, so this package never imports Prometheus) wraps
// it as a prometheus.Collector.
//
// # Cardinality
//
// Label values are capped per metric (WithMaxSeries, default 1000, at most
// MaxMaxSeries): the first values seen get their series; later ones, values
// longer than MaxLabelValue, invalid UTF-8 and calls with the wrong number
// of values go to the series whose values are all Overflow. The HTTP
// middleware records route templates (http.ServeMux's pattern, or
// WithRoute), Unmatched for requests no route matched, so probing random
// paths adds nothing. A series costs a few hundred bytes in the recorder
// (its atomics, map entry and cached key names) and,
// in Redis, one key plus one totals field (about 165 bytes per counter
// series on Redis 7; a histogram series one key per bucket).
//
// # Rollup
//
// Recorders created WithRollup also add their counter and histogram
// deltas to metrics:rollup:{metric_name}:pending. A Rollup, run on every
// instance, takes a lease per metric and each minute moves the pending
// deltas into the closed minute (a stream entry whose ID is the minute's
// start), adds them to the open hour and day, closes those when they end,
// trims every tier to its retention (default 8h, 7d, 90d; never below what
// the sink has not taken) and hands each closed bucket to the Sink,
// advancing the tier's watermark after the sink took it. Buckets are
// closed by server time. See Rollup for what "exactly once" means.
package metrics
