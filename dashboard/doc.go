// Package dashboard is the web dashboard of redschema: an http.Handler
// that shows a live Redis through the library's registry and packages.
// "redschema serve" mounts it; any Go program can too:
//
//	h, err := dashboard.New(dashboard.WithClients(cs), dashboard.WithNamespace(ns))
//	http.ListenAndServe("127.0.0.1:8080", h)
//
// Its pages: Schema (every registered key pattern with its live keys,
// memory and TTL health, the keys matching no pattern, and a key browser),
// Queues, Sessions and users, Rate limits, Presence and chat, Locks,
// Cache, Metrics, Sensors and AI memory, each read through its package.
// The page is plain HTML, CSS and JavaScript embedded in the binary (no
// build step, no CDN); it polls one JSON endpoint per page at the interval
// of WithRefresh, and draws its charts as inline SVG.
//
// # Guarantees
//
//   - Read-only by default: the mutating actions answer 403 unless the
//     Handler is built WithWrites, which requires WithToken.
//   - No cross-site reads or actions: every API request must carry the
//     page's X-Redschema-Request header or the X-Redschema-Token header
//     (or be marked Sec-Fetch-Site: same-origin); another site's page
//     cannot send them. Actions are POST only, need the token and are
//     refused when cross-site.
//   - Without a token the API serves only loopback clients naming a
//     loopback Host (no DNS rebinding); "redschema serve" needs a token
//     to listen elsewhere. Wrong tokens are throttled per address (10 a
//     minute).
//   - Nothing that grants access is shown: session IDs only as opaque
//     references, refresh-token digests and lock owner IDs never.
//   - Every action (with its token's Fingerprint) and every refused
//     request (with its Origin and Referer) is logged (WithLogger).
//   - A refresh costs a few round trips per node (TestRoundTripsPerRefresh
//     counts them); the schema page's SCAN is reused for 15s. Keep
//     the refresh long on a large keyspace.
//   - A part of a page that fails is reported and the rest shown.
//
// The dashboard registers no keys of its own: it reads the packages' keys.
//
// The long form (each page and what it reads, safety in full, the cost of
// each page's refresh) is
// https://github.com/redschema/redschema/blob/main/docs/dashboard.md.
package dashboard
