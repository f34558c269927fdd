// Package lock implements seed 001's distributed locks (§9) and seed 004's
// cron interval guard (§3) on Redis: lease locks with fencing tokens, a
// watchdog that turns a lost lease into a cancelled context, a fair
// (first-come, first-served) variant, a counting semaphore, and a guard
// that runs a cron job at most once per interval across instances.
//
// # Leases
//
// Client.TryAcquire takes the lease lock:{resource_type}:{resource_id} for a
// TTL if it is free; Client.Acquire waits for it as a RetryStrategy says
// (NoRetry, LinearBackoff, ExponentialBackoff with jitter, LimitRetry),
// bounded by its context. Every operation is one round trip: one Lua
// script, and every decision that involves time uses server TIME, so app
// clocks never matter to Redis. The
// key's value is the seed's {owner_id}:{timestamp}:{ttl} (owner ID: an
// optional WithOwner label, a dot and 24 random hex digits; timestamp:
// server Unix ms of the acquisition or last refresh; ttl: the lease in ms).
// Lock.Release and Lock.Refresh compare the owner ID in Lua and fail with
// ErrNotHeld when the lease expired or someone else holds the resource:
// nobody can release or extend a lease it does not hold.
//
// A TTL must be in (0, max TTL]; the max is 300s (seed 001 §11) unless
// WithMaxTTL sets another. Client.DefaultTTL returns the seed's defaults,
// registered as key patterns: File 60s, Workflow 300s, UserSession 5s,
// Cache 10s, and StandardTTL (30s) for other types.
//
// # Lost leases
//
// Lock.Context is cancelled, with context.Cause matching ErrLockLost, the
// moment the lease is considered lost: when a refresh finds it gone or
// taken, or when its conservative local deadline passes (the TTL counted
// from just before the request that set it) without a successful refresh.
// WithWatchdog refreshes the lease every period (default a third of the
// TTL), so a lock taken or stolen away is noticed within one period. Do
// the protected work under Lock.Context, and enable go-redis's
// ContextTimeoutEnabled so that contexts also bound network waits.
//
// # Fencing tokens
//
// A lease alone cannot protect a resource from a holder that paused (GC,
// a stalled network) past its TTL. Every acquisition therefore returns a
// fencing token, Lock.Fence: an integer strictly greater than every token
// issued before for the same resource. The acquire script computes it as
//
//	token = max(last token + 1, server TIME in microseconds)
//
// and stores it in lock:fence:{resource_type}:{resource_id}, whose TTL (1h,
// WithFenceTTL) is refreshed by each acquisition, so no counter key lives
// forever (a known peer leaked tens of millions of such keys). When the
// fence key expired or was deleted, tokens resume from server time, which
// is past every earlier token as long as the resource was not acquired more
// than once per microsecond on average and the server clock did not step
// back by more than the fence TTL. A fence value that is not a decimal below
// 2^53 - 1 (where Lua's doubles stop counting exactly) is reported as
// corrupt rather than reused. The three keys of a resource share the hash
// tag {resource_id}, so the script is single-slot on a cluster. Replication
// is asynchronous, so a failover can lose the last fence write; the new
// master's tokens still exceed the lost ones because they follow server
// time, provided its clock is not behind the old master's by more than the
// failover took (seconds; keep server clocks NTP-synchronised). The lease
// itself can be lost in a failover, as with every single-instance Redis
// lock; the fencing token is what protects the resource then.
//
// A resource checks the token on every write: it remembers the highest
// token it has accepted and rejects a write that carries a lower one (in
// SQL, UPDATE ... SET fence = $tok WHERE id = $id AND fence < $tok; in
// Redis, a script that compares a stored fence). A holder whose lease ran
// out while it was paused then fails at the resource instead of
// overwriting the new holder's work.
//
// # Fair locks
//
// With the Fair option, Acquire joins the queue
// lock:queue:{resource_type}:{resource_id} (a list of owner IDs, as the seed
// has it) and the lock goes to the head of the queue only. Each waiter's
// place has a deadline in lock:waiters:{resource_type}:{resource_id}
// (sorted set), renewed by each of its attempts: a waiter that disappears
// stops blocking the others after its own keep time, and one that gives up
// leaves at once. An entry without a deadline (evicted, or left behind by
// a failed cleanup) is dropped when it reaches the head. Both keys expire
// at the latest deadline instead of living forever (the seed gives the
// queue no TTL).
//
// # Semaphores
//
// Client.Semaphore admits up to N holders of a resource; each permit is a
// lease of its own (a *Lock whose Fence is 0) in the sorted set
// lock:sem:{resource_type}:{resource_id}, scored by expiry, so a crashed
// holder frees its permit when its TTL runs out.
//
// # Interval guard
//
// Client.Interval guards a cron-like job. Interval.Claim claims "run now"
// in one script only if at least the interval has passed since the last
// run by server time, and records the run in the same step, so with any
// number of instances and skewed clocks the job runs once per interval.
// The seed's key cron:last-run:{job_name} keeps its value (Unix ms as a
// decimal string) and its lack of TTL (one key per job); with hash tags
// off (keys.Namespace.NoHashTags) the key is byte-identical to the seed's,
// so the seed's application and this guard can share it. WithLease also
// holds lock:cron:{job_name} while the job runs, so a slow run never
// overlaps the next. Interval.Do runs a function under the guard. A claim
// is at most once: a claim whose reply is lost still counts as this
// interval's run, and a failover that loses the last-run write (replication
// is asynchronous) can let the interval run again.
//
// # What changed from the seeds
//
//   - Hash tags: the resource ID (or job name) is the tag, so a resource's
//     keys are co-located on a cluster; keys.Namespace.NoHashTags gives the
//     seeds' exact bytes on a standalone server.
//   - Seed 001's lock:user:{user_id}:session is lock:user-session:{user_id}
//     (resource type UserSession): every lock has the one shape
//     lock:{resource_type}:{resource_id}, so fence, queue and semaphore keys
//     follow from it. lock:cache:invalidate is resource type Cache with ID
//     "invalidate".
//   - The fair queue has a TTL and a companion deadline set, so crashed
//     waiters neither block the queue nor leak keys.
//   - Seed 004's read-compare-write from the application races (two
//     instances can both see "due") and trusts app clocks; Claim does not.
//   - Owner IDs are random per acquisition, so a holder that lost its
//     lease can never release its successor's.
//
// # Keys
//
// | Key pattern | Type | TTL | Purpose |
// |---|---|---|---|
// | `lock:{resource_type}:{{resource_id}}` | STRING | lease (default 30s, at most 300s) | lease lock; value {owner_id}:{timestamp_ms}:{ttl_ms} |
// | `lock:file:{{file_id}}` | STRING | 60s default | file processing lock (resource type "file") |
// | `lock:workflow:{{workflow_id}}` | STRING | 300s default | workflow execution lock (resource type "workflow") |
// | `lock:user-session:{{user_id}}` | STRING | 5s default | session creation lock (resource type "user-session") |
// | `lock:cache:{{operation}}` | STRING | 10s default | cache lock (resource type "cache"; ID "invalidate") |
// | `lock:fence:{resource_type}:{{resource_id}}` | STRING | 1h, refreshed by every acquisition | last fencing token issued (decimal) |
// | `lock:queue:{resource_type}:{{resource_id}}` | LIST | latest waiter deadline | fair lock: waiter owner IDs in arrival order |
// | `lock:waiters:{resource_type}:{{resource_id}}` | ZSET | latest waiter deadline | fair lock: owner ID -> deadline of its place (Unix ms) |
// | `lock:sem:{resource_type}:{{resource_id}}` | ZSET | latest permit expiry | semaphore: owner ID -> permit expiry (Unix ms) |
// | `cron:last-run:{{job_name}}` | STRING | none (bounded: one key per job) | interval guard: start of the last run, Unix ms (decimal) |
//
// # Errors
//
// ErrNotObtained (held by another, or the wait ran out; joined with the
// context's error when that ended it), ErrNotHeld (release, refresh or TTL
// of a lease the caller no longer holds), ErrLockLost (the cause of a lost
// lease's context), ErrInvalid (bad input, before any I/O; key errors also
// match keys.ErrInvalidKey), and keys.ErrCorrupt for a fence or last-run
// value that is not a number, naming the key. redis.Nil never escapes.
package lock
