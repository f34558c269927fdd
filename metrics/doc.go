// Package metrics keeps exact cluster-wide counters, gauges and histograms
// in Redis with no network call on the request path: recording is an
// atomic add in memory, and a flusher sends every delta in one pipeline
// per interval. It writes the home-automation backend's HTTP request
// metrics (same keys, same bytes) and the AI platform's metric series; a
// Reader reads them back, and the metrics/prom module exposes them to
// Prometheus.
//
//	rec, err := metrics.New(rdb, metrics.WithNamespace(keys.Namespace{Prefix: "ha:"}))
//	...
//	defer rec.Close(ctx)                                  // flushes what is left
//	handler = metrics.Middleware(rec)(mux)                // the HTTP request metrics, per route template
//	tokens, _ := rec.Counter("ai_tokens_used", "model", "type")
//	tokens.Add(420, "gpt-4", "prompt")                    // an atomic add
//	rd, _ := metrics.NewReader(rdb, rec.Definitions(), metrics.WithNamespace(ns))
//	snap, _ := rd.Read(ctx)                               // cluster-wide values, one pipeline
//
// # Guarantees
//
//   - Zero round trips per recording: only in-memory atomics; the flusher
//     sends everything in one pipeline per interval (default 1s) and on
//     Close.
//   - Exact totals across instances: a failed flush is resent unchanged
//     and loses nothing; a resent flush never counts twice (a per-slot
//     ledger of batch numbers, kept 24h).
//   - Gauges survive crashes: an instance killed without Close stops
//     counting within its heartbeat TTL (default 10s).
//   - Maxima (peak connections, peak speed) only grow, compared atomically.
//   - A Latest gauge is the latest Set by server time, whatever the order
//     in which instances flush; it outlives the instance that set it.
//   - Bounded memory: at most WithMaxSeries series per metric (default
//     1000), beyond which values go to one overflow series.
//   - WithSharedKeys: beside the home-automation backend's Node service,
//     connections:http:current moves by INCRBY and the Reader counts
//     every endpoint key, so both writers' counts add up.
//   - A failover can lose the last acknowledged flushes.
//   - Errors: ErrInvalid (before anything is written), ErrClosed;
//     keys.ErrCorrupt names a key this package did not write (a flush
//     skips it, or one foreign field of a hash of ours, and applies the
//     rest); network errors as they are.
//   - Deadlines: New refuses a go-redis client without
//     ContextTimeoutEnabled, and refuses Ring clients.
//
// # Keys
//
//	Key pattern                                             Type    TTL                                                                                                                                                                                                                                         Purpose
//	connections:http:current                                STRING  none (as in the home-automation layout: one key; the sum of the live instances' in-flight requests, rewritten by every flush (WithSharedKeys: moved by INCRBY of each instance's change, shared with other writers))                        current HTTP connections (in-flight requests) across all instances (INTEGER)
//	connections:http:max_since_startup                      STRING  none (as in the home-automation layout: one key, an atomic maximum)                                                                                                                                                                         highest connections:http:current seen since the deployment started (INTEGER)
//	errors:endpoint:{endpoint}                              STRING  none (as in the home-automation layout: bounded by the route templates and the cardinality cap (default 1000 + 1 overflow key, about 90 B each))                                                                                            responses with status >= 400 per endpoint "METHOD route" (INTEGER)
//	errors:total                                            STRING  none (as in the home-automation layout: one counter, never expires)                                                                                                                                                                         responses with status >= 400 across all instances (INTEGER)
//	metrics:counter:{{metric_name}}:{dimension}             STRING  5m (refreshed by every flush that adds to it)                                                                                                                                                                                               counter series: the cluster-wide count while the series is active (INTEGER); dimension = label values joined by '|'
//	metrics:endpoint-totals:{{metric_name}}                 HASH    none (bounded: two hashes (http_endpoint_requests, http_endpoint_errors) of at most the cap + 1 fields, as lasting as the home-automation layout's per-endpoint counters they sum)                                                          the home-automation layout's per-endpoint requests or errors in one hash (route template -> count), read by one HGETALL per scrape
//	metrics:gauge:{{metric_name}}:{dimension}               STRING  1m (refreshed by every flush of an instance holding the gauge)                                                                                                                                                                              gauge series: the live instances' contributions summed at the last flush, or a Latest gauge's latest Set by server time (INTEGER)
//	metrics:histogram:{{metric_name}}:{dimension}:{bucket}  STRING  5m (refreshed by every flush that adds to it)                                                                                                                                                                                               histogram series: observations in one bucket (upper bound, non-cumulative; "+Inf"), or "sum" / "count"
//	metrics:ledger:{{slot}}                                 HASH    1d (refreshed by every flush; fields of instances silent for a day are trimmed by the flush)                                                                                                                                                instance ID -> "seq:ms": the last flush batch applied to this slot, so a resent flush never counts twice
//	metrics:parts:{{slot}}:{gauge}                          HASH    10s (the heartbeat TTL (default 10s), refreshed by every flush; expired fields are dropped by the flush or read that finds them; connections:http:current's 1d WithSharedKeys, so that a flush finds a dead instance's count to take back)  Sum gauge contributions: "dimension|instance" -> "value:expires_ms:written_ms", summed on read (a Latest gauge's, as earlier versions wrote them, are still read)
//	metrics:persec:{{slot}}:{gauge}                         HASH    2m (refreshed by every flush; fields older than 60s are trimmed by the flush)                                                                                                                                                               requests per second: Unix second -> count, for speed_per_second and its maximum
//	metrics:rollup:{{metric_name}}:day                      STREAM  90d (retention (default 90d), as the minute tier)                                                                                                                                                                                           closed day buckets (UTC), entry ID = bucket start ms
//	metrics:rollup:{{metric_name}}:hour                     STREAM  7d (retention (default 7d), as the minute tier)                                                                                                                                                                                             closed hour buckets, entry ID = bucket start ms
//	metrics:rollup:{{metric_name}}:minute                   STREAM  8h (retention (default 8h): trimmed by MINID in the drain, never below what the sink has not taken)                                                                                                                                         closed minute buckets, entry ID = bucket start ms; fields series -> sum
//	metrics:rollup:{{metric_name}}:open                     HASH    90d (the longest tier retention, refreshed by every drain)                                                                                                                                                                                  rollup: the open hour and day buckets ("tier|field" -> sum) until they close
//	metrics:rollup:{{metric_name}}:pending                  HASH    1d (refreshed by every flush; at most the cap + 1 fields)                                                                                                                                                                                   rollup input: what the flushes added per series since the last drain
//	metrics:rollup:{{metric_name}}:state                    HASH    90d (the longest tier retention, refreshed by every drain)                                                                                                                                                                                  rollup lease (holder, expiry) and per-tier watermarks: last bucket closed, last bucket the sink took
//	metrics:totals:{{metric_name}}                          HASH    5m (the metric's TTL (60s for a Latest gauge), refreshed by every flush)                                                                                                                                                                    one metric's series in one hash (dimension, or dimension|bucket -> count; a Latest gauge: dimension -> "value:stamp_ms", its latest Set and that Set's server time), read by one HGETALL per metric per scrape; at most the cap + 1 fields
//	requests:accepted                                       STRING  none (as in the home-automation layout: one counter, never expires)                                                                                                                                                                         requests accepted (all requests but those refused: 429 and 503 by default) (INTEGER)
//	requests:endpoint:{endpoint}                            STRING  none (as in the home-automation layout: bounded by the route templates and the cardinality cap (default 1000 + 1 overflow key, about 90 B each))                                                                                            requests per endpoint "METHOD route" (INTEGER)
//	requests:max_speed_per_second                           STRING  none (as in the home-automation layout: one key, an atomic maximum)                                                                                                                                                                         highest requests:speed_per_second seen (INTEGER)
//	requests:speed_per_second                               STRING  none (as in the home-automation layout: one key, rewritten by every flush)                                                                                                                                                                  requests in the last complete second across all instances (INTEGER)
//	requests:total                                          STRING  none (as in the home-automation layout: one counter, never expires)                                                                                                                                                                         requests across all instances and endpoints (INTEGER); loopback ones left out with WithoutLoopback
//
// The long form (flushing, reading, cardinality, rollups, how the
// home-automation backend's and the AI platform's layouts map, limits) is
// https://github.com/redschema/redschema/blob/main/docs/metrics.md.
package metrics
