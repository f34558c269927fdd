// Package redschema is a library of typed Redis schema clients: sessions,
// presence, rate limits, locks, job queues, pub/sub, caches, metrics, chat,
// sensor time series and AI memory, each a small package over one shared
// keys package, so that a Go service never spells a Redis key, a TTL or a
// Lua script by hand. This root package holds only documentation.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
//	limits, err := ratelimit.New(rdb, ratelimit.Policy{{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerMinute(60)}})
//	res, err := limits.Allow(ctx, clientIP) // res.Allowed, res.RetryAfter
//	sessions, err := session.New(rdb)       // 1 h sliding, 24 h absolute
//	sess, tok, err := sessions.Create(ctx, session.Info{UserID: userID})
//
// # Guarantees
//
//   - Constructors take a redis.UniversalClient (client, cluster, ring,
//     sentinel) created with ContextTimeoutEnabled, and options.
//   - Every operation takes a context first and is one round trip.
//   - Read-then-write is one Lua script whose keys share a hash tag: atomic,
//     and on one slot of a cluster.
//   - Decisions that compare times across instances use the server's clock.
//   - Everything written has a TTL or a documented bound; no KEYS.
//   - A write that go-redis resends after a lost reply reports its first
//     outcome.
//   - Bad input is refused before anything is written; corrupt data is an
//     error naming the key, never a panic.
//
// # Packages
//
//   - aimemory is short-term AI memory on Redis, in the AI platform's
//     layout: capped conversations with token-budget windows, summaries of
//     what the cap evicts, a user context with daily token accounting and
//     budgets, read-through caches of RAG results and model responses, and
//     streaming of model output.
//   - aimemory/tiktoken (a module of its own) counts tokens for package
//     aimemory exactly as OpenAI's models do, with the byte-pair
//     vocabularies of github.com/tiktoken-go/tokenizer (cl100k_base,
//     o200k_base, p50k_base, r50k_base), which are compiled into the
//     binary: nothing is downloaded at run time, and a program that does
//     not import this module does not carry them (several MB each).
//   - cache is a typed read-through cache on Redis, in the AI platform's
//     API cache layout: one load across all processes on a miss, early
//     refresh, stale serving, negative caching, tags, batched hit counts,
//     an optional local tier, and net/http middleware with HTTP caching
//     semantics.
//   - chat runs admin support chat on Redis: conversations handed to admins
//     under capacity (least-loaded, round robin or explicit) with a
//     priority backlog, an unread queue, a message cache, dashboards, typed
//     events, and typing and availability from the presence package.
//   - codec is the value encoding that redschema packages use for the
//     caller's payload types.
//   - connect opens the Redis a program talks to, with the client settings
//     the redschema packages rely on: the server or cluster a URL names,
//     or, when there is none, an embedded in-process Redis (miniredis) for
//     development, examples and demos.
//   - connect/connecttest runs programs built on connect against the Redis
//     a test suite runs on, as this repository's example programs' tests
//     do: the 3-master cluster of REDIS_CLUSTER_ADDRS, else the server of
//     REDIS_ADDR, else (neither set) connect's embedded server.
//   - dashboard is the web dashboard of redschema: an http.Handler that
//     shows a live Redis through the library's registry and packages.
//   - keys is the one place in redschema that spells a Redis key.
//   - lock gives Go services distributed locks on Redis: lease locks with
//     fencing tokens (Client.Acquire), a watchdog that turns a lost lease
//     into a cancelled context, a fair (first-come, first-served) variant,
//     all-or-nothing locks on several resources (Client.AcquireMulti),
//     read-write locks (Client.RWMutex), leader election (Client.Election),
//     a counting semaphore (Client.Semaphore), and a guard that runs a cron
//     job at most once per interval across instances (Client.Interval).
//   - metrics keeps exact cluster-wide counters, gauges and histograms in
//     Redis with no network call on the request path: recording is an
//     atomic add in memory, and a flusher sends every delta in one pipeline
//     per interval.
//   - metrics/prom (a module of its own) exposes redschema metrics to
//     Prometheus: a Collector that reads the cluster-wide values from Redis
//     (metrics.Reader: one pipeline per scrape) and names them by
//     Prometheus conventions.
//   - presence tracks who is online in Redis: a Tracker keeps multi-device
//     connections with heartbeats and stale-connection pruning, last seen,
//     statuses (invisible included), change events and a sweeper that
//     announces silent offlines; Channels keeps who is in which room, one
//     member per user, with exactly-once join and leave events; the Tracker
//     also keeps typing indicators and admins' availability.
//   - pubsub is typed publish/subscribe on Redis: a Topic[T] names one
//     channel, pubsub:{domain}:{event_type}, and the Go type of its
//     payload; Publish encodes it in a JSON envelope {event, timestamp,
//     payload, source, id}, Subscribe returns a Go channel of decoded
//     events.
//   - queue is a reliable typed job queue on Redis: priorities, delays,
//     leases (visibility timeouts), retries with backoff, a dead-letter
//     list, exact statistics and a worker runner.
//   - queue/otelqueue (a module of its own) carries OpenTelemetry trace
//     context through the jobs of package queue and traces their handling.
//   - ratelimit limits request rates per identifier (API key, client IP,
//     user) in Redis: fixed window, sliding log, sliding window counter and
//     GCRA, alone or combined in a Policy that is checked and consumed
//     atomically, with per-API-key runtime config, blocks, waiting,
//     refunds, an in-process deny cache, a degraded mode for outages and
//     net/http middleware.
//   - sensor stores sensor time series in Redis in the sensor collector's
//     layout (motion events, temperature and illuminance, and readings of
//     any other type), kept for a retention window, with discovery,
//     server-side queries and minute/hour rollups.
//   - sensor/mqtt (a module of its own) is the sensor collector's agent: it
//     subscribes to the raw sensor topics on an MQTT broker
//     (automation/raw/{type}/{location} by default), parses each message
//     into a sensor.Reading, and writes them to Redis with
//     sensor.Client.IngestBatch, in the collector's layout
//     (https://github.com/redschema/redschema/blob/main/docs/sensor-collector.md).
//   - session keeps web sessions in Redis: one hash per session with a
//     sliding idle timeout under an absolute lifetime cap, a per-user
//     index, rotating refresh tokens with reuse detection, renewal,
//     lifecycle events, a JWT blacklist, user records with a status
//     (Users), and net/http middleware with CSRF protection.
//
// The redschema command (cmd/redschema) prints, audits, inspects and
// serves the schema. The long forms, and the five reference systems the
// library serves: https://github.com/redschema/redschema/blob/main/docs/README.md.
package redschema

//go:generate go run ./internal/cmd/gendoc
