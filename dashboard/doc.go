// Package dashboard is the web dashboard of redschema: an http.Handler
// that shows a live Redis through the library's registry and packages.
// "redschema serve" mounts it; any Go program can too:
//
//	h, err := dashboard.New(dashboard.WithClients(cs), dashboard.WithNamespace(ns))
//	http.ListenAndServe("127.0.0.1:8080", h)
//
// # Pages
//
//   - Schema: every registered key pattern with its live key count,
//     memory (MEMORY USAGE of a sample), TTL health (keys missing their
//     TTL, keys of the wrong type or database) and the keys matching no
//     pattern, from keys.Registry.AuditLayout; a key browser shows a key
//     decoded by its owning package (keys.Registry.Inspect), as
//     "redschema inspect" does.
//   - Queues: every queue (queue.Names) with its ready jobs per priority,
//     scheduled jobs, jobs in flight with their lease deadlines, dead
//     letters with their last error (queue.Queue.ReadView), and the
//     processed and failed totals sampled at each refresh as a chart; a
//     dead letter can be requeued or deleted (Requeue, Delete).
//   - Sessions and users: the users with the most sessions
//     (session.IndexedUsers), a user's record and live sessions
//     (session.Store.List and Get); revoke one or all sessions, block or
//     unblock the user (Revoke, RevokeAll, session.Users.Block, Unblock).
//   - Rate limits: the blocked identifiers with their remaining time
//     (ratelimit.Blocks), lifted with Limiter.Unblock (counters kept); the
//     API keys with a
//     runtime config (ratelimit.ConfiguredKeys), read and edited with
//     Limiter.Config and SetConfig; and, for the limiters registered
//     WithLimiter, what each would decide for an identifier (Peek:
//     allowed, limit, remaining, retry and reset times of the binding
//     rule), since only the application knows its policies.
//   - Presence and chat: the online count and who is online
//     (presence.Tracker.OnlineNow), a user's status, last seen and
//     connections with their devices (Get, Connections), read together
//     (ReadView); the support admins' availability and load
//     (chat.Chat.Admins), and the unread queue by priority and the
//     unassigned backlog (Unread, Backlog), read together (ReadView). A
//     part that fails is reported and the rest shown. WithPresence and
//     WithChat pass the application's options (layout, deployment tag)
//     so that the page reads what it wrote.
//   - Locks: held lease locks with their owner's label and remaining TTL
//     (lock.Held), semaphores with their permits (lock.Semaphores), and
//     interval jobs with their last run (lock.LastRuns) and, for the jobs
//     given WithInterval, the next. Owner IDs, which prove ownership of a
//     lease, are never shown: only their labels (lock.WithOwner).
//   - Cache: the API cache's live entries, hits, hit rate and size per
//     endpoint (cache.EndpointStats) and its invalidation tags
//     (cache.TagStats), invalidated with cache.Store.InvalidateTag.
//   - Metrics: seed 000's request totals per endpoint, every series of
//     metrics.CommonMetrics and of WithMetrics (metrics.Reader.Read, one
//     pipeline): counters as bars, histograms as bucket charts with p50
//     and p95, and the request and error totals sampled at each refresh
//     as a throughput chart.
//   - Sensors: the locations and their sensor types (sensor.Client.
//     Locations, Types), a type's latest readings (Latest) and its last
//     24 hours per hour as a chart of the average over the min-max band
//     (Aggregate, from the rollups where they exist).
//   - AI memory: a user's tokens counted today, recent topics and last
//     conversation (aimemory.Memory.User), and a conversation's window
//     (Window: system prompt, summary, messages with their tokens), read
//     together (ReadView).
//
// The page is plain HTML, CSS and JavaScript embedded in the binary (no
// build step, no CDN); it polls one JSON endpoint per page at the
// interval of WithRefresh, and draws its charts as inline SVG.
//
// # Safety
//
//   - Read-only by default: the mutating actions answer 403 unless the
//     Handler is built WithWrites, which requires WithToken.
//   - Actions are POST only, need the token (the X-Redschema-Token header
//     or a "token" form field) and are refused (403) when the browser
//     marks them cross-site: a Sec-Fetch-Site other than same-origin, or
//     an Origin whose host is not the request's.
//   - With a token, every API request needs it; without one, the API
//     serves only requests whose Host is a loopback name or address, so a
//     DNS-rebound page cannot read it. "redschema serve" refuses to listen
//     on a non-loopback address without a token.
//   - Nothing that grants access is shown: session IDs (digests that can
//     revoke a session) reach the page only as opaque references keyed by
//     a per-process secret, on the sessions page and in the key browser
//     (a session index's members); refresh-token digests never (the
//     packages' decoders omit them).
//   - Every action, and every refused request, is logged (WithLogger).
//
// Cost per refresh (TestRoundTripsPerRefresh counts it per node): the
// schema page SCANs the keyspace (every master of a cluster) and reuses
// the result for SchemaReuse, so a refresh within it costs nothing; the
// rate-limit, lock and cache pages read through their packages'
// ReadOverview (ratelimit, lock, cache): the SCANs of their patterns
// advance together in one pipeline, then one pipeline reads what they
// found, so two round trips per node on a keyspace of up to about a
// thousand keys per node per pattern; the metrics page is one pipeline
// (metrics.Reader.Read), the sessions page one SCAN and one pipeline
// (session.IndexedUsers), the sensor page one pipeline once it names the
// location and type it shows, as it does on refresh
// (sensor.Client.ReadView), the AI memory page one pipeline once it
// names the conversation it shows, as it does on refresh
// (aimemory.Memory.ReadView; a new last conversation costs one more
// round trip), the presence and chat page one pipeline per node: the
// presence view's reads (presence.Tracker.QueueView: a TIME, a ZRANGE
// per slot of the online index, which touches every master, and the
// user's GET and script) and the chat view's (chat.Chat.QueueView: three
// read-only scripts) share one pipeline when presence and chat share a
// client; in two databases (WithClients) they are two pipelines, sent at
// once; the queue list one SCAN and one pipeline for every queue's stats
// (queue.Names, queue.Queue.QueueView), a queue's page one pipeline
// (queue.Queue.ReadView: its stats and four job lists).
// Keep the refresh long on a large keyspace.
package dashboard
