// Package lock gives Go services distributed locks on Redis: lease locks
// with fencing tokens, a watchdog that turns a lost lease into a cancelled
// context, a fair (first-come, first-served) variant, all-or-nothing locks
// on several resources, read-write locks, leader election, a counting
// semaphore, and a guard that runs a cron job at most once per interval
// across instances.
//
//	locks, err := lock.New(rdb, lock.WithOwner("worker-1"))
//	...
//	l, err := locks.Acquire(ctx, lock.File, "report.pdf", locks.DefaultTTL(lock.File), lock.WithWatchdog(0))
//	if err != nil {
//		return err // errors.Is(err, lock.ErrNotObtained): someone else held it
//	}
//	defer l.Release(ctx)
//	return process(l.Context(), l.Fence()) // cancelled if the lease is lost
//
// # Guarantees
//
//   - One round trip per operation: each is one Lua script whose keys
//     share the resource's hash tag, so it is atomic and single-slot on a
//     cluster. Calls made while others are in flight share round trips
//     (auto-pipelining, see below); each is still its own script with its
//     own reply. Needs Redis 6.2 or newer (SET ... KEEPTTL GET).
//   - Server time: every decision that involves time reads the server's
//     TIME, so application clocks never matter.
//   - Nobody releases, refreshes or reads the TTL of a lease it does not
//     hold: the owner ID, random per acquisition, is compared in Lua.
//   - Idempotent under retry: go-redis sends a command again when its
//     reply was lost after the server ran it. Acquire, TryAcquire, permits
//     and Claim recognise their own owner (or claim) ID and report the
//     lease, token or claim they already got; Refresh extends again;
//     Release, finding its lease gone while the lease had not run out
//     locally, reports the release it made (see Lock.Release); TTL, Held
//     and LastRun read again. The same holds when a connection breaks
//     under a shared pipeline and go-redis resends the whole pipeline:
//     each call in it is one of these scripts, and recognises its own
//     request again whatever the others in the batch did (a resent
//     Refresh extends from the later server time, which only lengthens the
//     lease on the server; the local deadline still counts from before the
//     first send).
//   - A lease is valid until its TTL runs out on the server; the Lock's
//     local deadline (its TTL counted from just before the request) is
//     never later than that, so Lock.Context is cancelled before another
//     holder can get the lease.
//   - Fencing tokens strictly increase per resource (see below).
//   - Everything written has a TTL, except an interval's last-run key (one
//     per job). Inputs are bounded (MaxLease, MaxFenceTTL, MaxInterval,
//     MaxPermits); data this package did not write (a lock key without a
//     TTL, a fence or last-run value that is not a number, a last run more
//     than a day ahead of the server clock, a key of the wrong type) is an
//     error naming the key, except foreign waiters and permits that would
//     never expire, which are dropped.
//   - Failover: Redis replicates asynchronously, so without
//     WithDurability a failover can lose a lease that Acquire or
//     TryAcquire returned (another caller may then take the resource while
//     the first still works), a Refresh (the lease then ends at its older
//     deadline, before the holder's), a permit, an interval claim (the
//     interval may run again) or the last fence write; the new master's
//     tokens still exceed the lost ones (see Fencing tokens). A lost
//     Release only leaves the lease to expire. The chaos tier
//     (internal/chaos, TestTakeoverLosesNoDurableJob: 4 CLUSTER FAILOVER
//     TAKEOVERs of one shard in about 40 s, leases taken at about 280/s)
//     lost 8 of 11,393 acknowledged leases, about 2 per takeover (5 to 9
//     over the runs); issue 21 saw 5-6 per takeover with 16 goroutines on
//     300 resources. With WithDurability(1, 500*time.Millisecond) it lost
//     0 of 992 (0 in every run): a lease
//     returned with a nil error is on the replica, and one that is not
//     comes back held, with ErrNotDurable.
//   - Errors: ErrNotObtained (held by another, or the wait ran out while
//     it was), ErrNotHeld (release, refresh or TTL of a lease the caller no
//     longer holds), ErrLockLost (the cause of a lost lease's context),
//     ErrInvalid (bad input, before any I/O; a bad key segment also matches
//     keys.ErrInvalidKey), and keys.ErrCorrupt for a fence or last-run
//     value this package did not write, naming the key. A network failure,
//     a timeout or a cluster error is returned as such, never as
//     ErrNotObtained. Every error names the operation and the key;
//     redis.Nil never escapes.
//   - Deadlines: create the client with ContextTimeoutEnabled: true, or
//     go-redis ignores context deadlines while a server hangs.
//
// # Keys
//
//	Key pattern                                    Type     TTL                                                                 Purpose
//	cron:last-run:{{job_name}}                     STRING   none (bounded: one key per cron job)                                interval guard: start of the job's last run, Unix ms as a decimal string
//	lock:cache:{{operation}}                       STRING   10s (default; callers may pick any lease up to the max)             cache lock (resource type "cache"; seed: lock:cache:invalidate)
//	lock:fence:{resource_type}:{{resource_id}}     STRING   1h (at least this after the last acquisition, at most 1/4096 more)  last fencing token issued for the resource (decimal)
//	lock:file:{{file_id}}                          STRING   1m (default; callers may pick any lease up to the max)              file processing lock (resource type "file")
//	lock:queue:{resource_type}:{{resource_id}}     LIST     latest waiter deadline                                              fair lock: waiter owner IDs in arrival order
//	lock:readers:{resource_type}:{{resource_id}}   ZSET     5m (latest reader expiry)                                           read-write lock: reader owner ID -> expiry (Unix ms)
//	lock:rw:{resource_type}:{{resource_id}}        STRING   30s (writer's lease, at most 300s)                                  read-write lock: the writer's lease; value {owner_id}:{timestamp_ms}:{ttl_ms}
//	lock:sem:{resource_type}:{{resource_id}}       ZSET     5m (latest permit expiry)                                           semaphore: permit owner ID -> expiry (Unix ms)
//	lock:user-session:{{user_id}}                  STRING   5s (default; callers may pick any lease up to the max)              session creation lock (resource type "user-session"; seed: lock:user:{user_id}:session)
//	lock:waiters:{resource_type}:{{resource_id}}   ZSET     latest waiter deadline                                              fair lock: waiter owner ID -> deadline (Unix ms) of its place in the queue
//	lock:workflow:{{workflow_id}}                  STRING   5m (default; callers may pick any lease up to the max)              workflow execution lock (resource type "workflow")
//	lock:writers:{resource_type}:{{resource_id}}   ZSET     latest waiting writer's deadline                                    read-write lock: waiting writer owner ID -> deadline (Unix ms) of its place; turns new readers away
//	lock:{resource_type}:{{resource_id}}           STRING   30s (lease duration, at most 300s)                                  lease lock; value {owner_id}:{timestamp_ms}:{ttl_ms}
//	lock:released:{resource_type}:{{resource_id}}  CHANNEL  -                                                                   sharded (SPUBLISH) on the resource's slot by a release with WithWakeups; wakes its waiters
//
// # Compatibility with existing layouts
//
// Keys and values follow the layouts of seed 001 (§9, distributed locks)
// and seed 004 (§3, the cron interval guard), with these changes:
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
//     Its cron:last-run:{job_name} keeps its value (Unix ms as a decimal
//     string) and its lack of TTL, so the seed's application and this
//     guard can share it.
//   - Owner IDs are random per acquisition, so a holder that lost its
//     lease can never release its successor's.
//
// # Leases
//
// Client.TryAcquire takes the lease lock:{resource_type}:{resource_id} for a
// TTL if it is free; Client.Acquire waits for it as a RetryStrategy says
// (NoRetry, LinearBackoff, ExponentialBackoff with jitter, LimitRetry),
// bounded by its context. The key's value is
// {owner_id}:{timestamp}:{ttl} (owner ID: an
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
// and stores it in lock:fence:{resource_type}:{resource_id}, which lives at
// least the fence TTL (1h, WithFenceTTL) after the last acquisition and at
// most 1/4096 of it longer, so no counter key lives forever (a known peer
// leaked tens of millions of such keys). One command both reads the last
// token and writes the new one (SET ... KEEPTTL GET); the key's TTL is
// set again only when the key is new, when the token is last + 1, or when
// the token enters a new window of 1/4097 of the keep time (about 0.9s for
// 1h), so a busy resource pays for it about once a second while the key
// still outlives every token by the fence TTL (see fence.lua). When the
// fence key expired or was deleted, tokens resume from server time, which
// is past every earlier token as long as the resource was not acquired more
// than once per microsecond on average and the server clock did not step
// back by more than the fence TTL. A fence value that is not a decimal below
// 2^53 - 1 (where Lua's doubles stop counting exactly) is reported as
// corrupt rather than reused, and left as it was, TTL included. The three
// keys of a resource share the hash tag {resource_id}, so the script is
// single-slot on a cluster. Replication is asynchronous, so a failover can
// lose the last fence write; the new master's tokens still exceed the lost
// ones because they follow server time, provided its clock is not behind
// the old master's by more than the failover took (seconds; keep server
// clocks NTP-synchronised). The lease itself can be lost in a failover, as
// with every single-instance Redis lock, unless WithDurability waits for a
// replica; the fencing token is what protects the resource then.
//
// A resource checks the token on every write: it remembers the highest
// token it has accepted and rejects a write that carries a lower one (in
// SQL, UPDATE ... SET fence = $tok WHERE id = $id AND fence < $tok; in
// Redis, a script that compares a stored fence). A holder whose lease ran
// out while it was paused then fails at the resource instead of
// overwriting the new holder's work.
//
// # Auto-pipelining
//
// A Client keeps at most DefaultPipelines round trips in flight
// (WithPipelining changes it, 0 turns it off); calls made by other
// goroutines meanwhile wait and go out together, as one pipeline. Each
// call is still its own atomic script with its own reply; only the network
// reads and writes are shared, which under load cost the client and Redis
// more than the scripts do (see bench/RESULTS.md). A call made while none
// is in flight is sent at once, alone, so a lone caller sees no
// difference. go-redis hooks see the shared pipelines. A call whose
// context ends while it waits is never sent; one whose context ends in
// flight returns the context's error, and Acquire then gives back the
// lease it may have taken, as after any error on the wire.
//
// # Wake-ups
//
// By default a waiting Acquire polls: it tries again after each backoff,
// so a lock released just after an attempt stays idle for up to a
// backoff (the default doubles from 8ms to 256ms). With WithWakeups the
// release script publishes on the sharded channel
// lock:released:{resource_type}:{resource_id} (SPUBLISH, which stays on
// the resource's shard on a cluster), and a waiter that found the lock
// held subscribes to it (SSUBSCRIBE) and tries again the moment a release
// is announced; the backoff remains the fallback for announcements lost or
// never made (an expiry, a reconnect, a failover, an older server). On a
// real Redis 7.0 the hand-off went from about 16ms polling to about 0.9ms
// (bench/, BenchmarkLockHandoff: release to the waiter's return). Each
// waiting call holds one pub/sub connection while it waits. Multi-locks,
// read-write locks and semaphores announce their releases on the same
// channel of each resource and their waits use it the same way (see
// WithWakeups).
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
// # Multi-resource locks
//
// Client.TryAcquireMulti and Client.AcquireMulti take the leases of several
// resources, all or none, each with its own fencing token (the same rule
// as Acquire's: fence.lua). Resources whose keys share a slot (one ID
// under several types, since the ID is the hash tag; or any resources
// when the namespace has no hash tags, on a standalone server) are taken
// by one script that checks every lease first and writes nothing when one
// is held. Resources spread over several slots are grouped by slot and the
// groups taken in slot order, one script each; when a group finds a
// resource held, the groups already taken are released in one pipeline
// before the call returns (or waits and tries again, for AcquireMulti), so
// a caller never holds part of a set. A set over k slots costs k round
// trips (plus one pipeline on a refusal after the first group); other
// callers may see part of such a set held for the span of an attempt.
// MultiLock.Release and MultiLock.Refresh act on every lease in one
// pipeline; MultiLock.Context is cancelled when any lease is lost.
//
// # Read-write locks
//
// Client.RWMutex gives a resource a read-write lock: RWMutex.RLock and
// TryRLock take a reader's lease (many at once), Lock and TryLock the
// writer's (alone, with a fencing token from the resource's fence counter,
// the rule of Acquire). Readers are leases in the sorted set
// lock:readers:{resource_type}:{resource_id} (owner ID -> expiry), the
// writer's lease is lock:rw:{resource_type}:{resource_id}. A writer
// waiting in Lock keeps a place in lock:writers:{resource_type}:{resource_id}
// (owner ID -> deadline, renewed by each attempt, at least every RWKeep/3)
// and new readers are turned away meanwhile: writer preference, so readers
// never starve a writer (writers can starve readers). A writer that gives
// up leaves at once; one that vanished stops keeping readers out after
// RWKeep. Every lease is a *Lock with Release, Refresh, TTL, Context and
// WithWatchdog; each operation is one script on server time, on keys that
// share the resource's hash tag.
//
// # Semaphores
//
// Client.Semaphore admits up to N holders of a resource; each permit is a
// lease of its own (a *Lock whose Fence is 0) in the sorted set
// lock:sem:{resource_type}:{resource_id}, scored by expiry, so a crashed
// holder frees its permit when its TTL runs out. Semaphore.AcquireN and
// TryAcquireN take n permits for one holder, all or none (weighted
// acquisition): they are the members {owner_id}, {owner_id}:2, ...,
// {owner_id}:n with one expiry, so the holder's Lock releases and
// refreshes all n, and Held counts each.
//
// # Leader election
//
// Client.Election elects one leader among the processes that campaign for
// a name: Election.Campaign waits (as Acquire does) for the lease
// lock:election:{name} and keeps it with a watchdog; the returned Lock's
// Context is cancelled when the lead is lost and its Fence guards the
// leader's writes. Election.Resign hands the lead over at once (a crashed
// leader's lead ends with its lease). Election.Leader reads who leads
// (owner ID and label, fence, since when, remaining lease) in one
// read-only script; Election.Observe polls it and sends each change.
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
// is asynchronous) can let the interval run again, unless WithDurability
// makes the claim wait for a replica.
package lock
