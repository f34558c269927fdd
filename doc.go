// Package redschema is a library of typed Redis schema clients: sessions,
// presence, rate limits, locks, job queues and pub/sub, each a small typed
// package over one shared keys package, so that a Go service never spells a
// Redis key, a TTL or a Lua script by hand.
//
// This root package holds only documentation. The packages:
//
//	keys       key templates, segment encoding, hash tags, slots, the
//	           registry of every pattern, schema tables, live audit, DB layout
//	codec      the value encoding for the caller's payload types (JSON default)
//	ratelimit  fixed window, sliding log, sliding counter, GCRA, multi-limit
//	           policies, runtime config, net/http middleware
//	lock       leases with fencing tokens, watchdog, fair lock, semaphore,
//	           cron interval guard
//	session    sessions with sliding and absolute expiry, per-user index,
//	           hashed refresh tokens, JWT revocation, user records, middleware
//	presence   multi-device presence, heartbeats, last seen, statuses,
//	           change events, typing indicators
//	queue      reliable job queues: priorities, leases, retries, dead letters,
//	           stats, worker runner
//	pubsub     typed publish/subscribe with the seed envelope
//
// Every package follows the same contract: constructors take a
// redis.UniversalClient (client, cluster, ring, sentinel) and options;
// every operation takes a context and is one round trip; read-then-write is
// one Lua script whose keys share a hash tag; decisions across instances use
// the server's clock; everything written has a TTL or a documented bound;
// bad input is refused before anything is written; corrupt data yields an
// error naming the key. See README.md for the set-up commands.
package redschema

//go:generate go run ./internal/cmd/gendoc
