// Package lock gives Go services distributed locks on Redis: lease locks
// with fencing tokens (Client.Acquire), a watchdog that turns a lost lease
// into a cancelled context, a fair (first-come, first-served) variant,
// all-or-nothing locks on several resources (Client.AcquireMulti),
// read-write locks (Client.RWMutex), leader election (Client.Election), a
// counting semaphore (Client.Semaphore), and a guard that runs a cron job
// at most once per interval across instances (Client.Interval).
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
//   - Atomic: each operation is one Lua script on keys that share the
//     resource's hash tag (single-slot on a cluster). Needs Redis 6.2+.
//   - Server time decides every expiry and interval; app clocks never do.
//   - Only the holder releases, refreshes or reads its lease: its owner ID,
//     random per acquisition, is compared in Lua.
//   - Idempotent under retry: a call that go-redis resends (alone or in a
//     resent pipeline) recognises its own first attempt.
//   - Lock.Context is cancelled (cause ErrLockLost) before another holder
//     can get the lease.
//   - Fencing tokens (Lock.Fence) strictly increase per resource.
//   - Everything written has a TTL, except one last-run key per interval
//     job; inputs are bounded (leases up to a day, intervals up to 366 days, ...).
//   - Data this package did not write is an error naming the key.
//   - A failover can lose an acknowledged lease (about 2 per takeover in
//     the chaos tier); with WithDurability it lost none.
//   - Errors: ErrNotObtained, ErrNotHeld, ErrLockLost, ErrInvalid,
//     ErrNotDurable; a network failure is returned as such, never as
//     ErrNotObtained.
//   - Deadlines: create the client with ContextTimeoutEnabled: true, or
//     go-redis ignores context deadlines while a server hangs.
//
// # Keys
//
//	Key pattern                                    Type     TTL                                                                 Purpose
//	cron:last-run:{{job_name}}                     STRING   none (bounded: one key per cron job)                                interval guard: start of the job's last run, Unix ms as a decimal string
//	lock:cache:{{operation}}                       STRING   10s (default; callers may pick any lease up to the max)             cache lock (resource type "cache"; the AI platform spells it lock:cache:invalidate)
//	lock:fence:{resource_type}:{{resource_id}}     STRING   1h (at least this after the last acquisition, at most 1/4096 more)  last fencing token issued for the resource (decimal)
//	lock:file:{{file_id}}                          STRING   1m (default; callers may pick any lease up to the max)              file processing lock (resource type "file")
//	lock:queue:{resource_type}:{{resource_id}}     LIST     latest waiter deadline                                              fair lock: waiter owner IDs in arrival order
//	lock:readers:{resource_type}:{{resource_id}}   ZSET     5m (latest reader expiry)                                           read-write lock: reader owner ID -> expiry (Unix ms)
//	lock:rw:{resource_type}:{{resource_id}}        STRING   30s (writer's lease, at most 300s)                                  read-write lock: the writer's lease; value {owner_id}:{timestamp_ms}:{ttl_ms}
//	lock:sem:{resource_type}:{{resource_id}}       ZSET     5m (latest permit expiry)                                           semaphore: permit owner ID -> expiry (Unix ms)
//	lock:user-session:{{user_id}}                  STRING   5s (default; callers may pick any lease up to the max)              session creation lock (resource type "user-session"; the AI platform spells it lock:user:{user_id}:session)
//	lock:waiters:{resource_type}:{{resource_id}}   ZSET     latest waiter deadline                                              fair lock: waiter owner ID -> deadline (Unix ms) of its place in the queue
//	lock:workflow:{{workflow_id}}                  STRING   5m (default; callers may pick any lease up to the max)              workflow execution lock (resource type "workflow")
//	lock:writers:{resource_type}:{{resource_id}}   ZSET     latest waiting writer's deadline                                    read-write lock: waiting writer owner ID -> deadline (Unix ms) of its place; turns new readers away
//	lock:{resource_type}:{{resource_id}}           STRING   30s (lease duration, at most 300s)                                  lease lock; value {owner_id}:{timestamp_ms}:{ttl_ms}
//	lock:released:{resource_type}:{{resource_id}}  CHANNEL  -                                                                   sharded (SPUBLISH) on the resource's slot by a release with WithWakeups; wakes its waiters
//
// The long form (leases, fencing, fair, multi-resource and read-write
// locks, wake-ups, failover figures, how the reference layouts map) is
// https://github.com/redschema/redschema/blob/main/docs/lock.md.
package lock
