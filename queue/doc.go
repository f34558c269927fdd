// Package queue is a reliable typed job queue on Redis: priorities,
// delays, leases (visibility timeouts), retries with backoff, a
// dead-letter list, exact statistics and a worker runner. It also has
// periodic jobs (Schedule), pause and resume, global and per-group
// limits, flows (a parent that runs after its children), results,
// cancellation, middleware and an event stream.
//
//	q, err := queue.New[Execution](rdb, "n8n")
//	id, err := q.Enqueue(ctx, Execution{WorkflowID: "wf-1"}, queue.WithPriority(queue.High))
//	err = q.Run(ctx, func(ctx context.Context, j *queue.Job[Execution]) error {
//		return execute(ctx, j.Payload) // nil acks; an error retries, then dead-letters
//	}, 8)
//
// # Guarantees
//
//   - One round trip per operation: each is one Lua script (EnqueueBatch one
//     pipeline); concurrent Enqueues share round trips (WithPipelining).
//   - Atomic and cluster-safe: every key of a queue has the queue name as
//     its hash tag, so each script touches one slot.
//   - At-least-once delivery: a job whose lease runs out comes back; a
//     worker whose lease was recovered gets ErrLeaseLost, never settling it.
//     After data loss (a restart that lost the data, a failover) a job can
//     run twice; the stale worker still gets ErrLeaseLost (docs/queue.md).
//   - Idempotent under retry: a write that go-redis resends after a lost
//     reply gets its first outcome back (a reply memo kept 3 minutes).
//   - Server time decides every lease, delay and retry; a lease never ends
//     on the server before the holder's local deadline.
//   - Bounds: delays up to 366 days, leases in [10ms, 24h], retries
//     up to 100,000, payloads up to WithMaxPayload, else ErrInvalid.
//   - Bounded memory: the dead-letter list has a TTL and a cap; every other
//     key holds one wake-up token or live jobs only (see the table).
//   - Errors: sentinels match with errors.Is; data the package did not write
//     is keys.ErrCorrupt naming the key; an outage is never a sentinel.
//   - Failover: without WithDurability a failover can lose acknowledged
//     enqueues and acks; with it, nil means on the replicas, or ErrNotDurable.
//   - Deadlines: New refuses a client without ContextTimeoutEnabled: true.
//
// # Keys
//
//	Key pattern                              Type     TTL                                                                                                                                                                    Purpose
//	queue:dlq:{{queue_name}}                 LIST     7d (refreshed on push; trimmed to the dead-letter cap)                                                                                                                 dead letters: job JSON with its last error, newest first
//	queue:stats:{{queue_name}}               HASH     none (bounded: one hash of counters per queue)                                                                                                                         total_processed, total_failed, avg_process_time_ms, last_processed_at (+ enqueued, dead, dead trimmed, FIFO and delivery sequences, paused flag, group round-robin cursor, groups the last whole read found)
//	queue:{{queue_name}}:active              ZSET     none (bounded: one member per job in flight)                                                                                                                           leases: in-flight job IDs scored by lease deadline (server ms)
//	queue:{{queue_name}}:cancel              HASH     none (bounded: one field per job in flight that Cancel was asked to stop, deleted when the job is settled (and by later Cancels once the job is gone))                 job ID -> server time (ms) of a Cancel of the job in flight; Run's workers cancel its handler's context
//	queue:{{queue_name}}:daily:{day}         HASH     91d (set when the day's hash is created (its first count); a queue keeps at most 91 of them)                                                                           processed and failed counts of one UTC day (yyyy-mm-dd of the server clock), written with total_processed and total_failed; read by Inspector.Daily
//	queue:{{queue_name}}:done                HASH     the queue's retention (WithRetention), refreshed on each write; entries past it or over the cap are trimmed in the script that adds one                                finished jobs kept for WithRetention: job ID -> JSON (state, finish time, result, last progress, job)
//	queue:{{queue_name}}:done_at             ZSET     the queue's retention (WithRetention), refreshed on each write; trimmed with the done hash                                                                             index of the done hash: job ID scored by when its entry expires (server ms)
//	queue:{{queue_name}}:errors              HASH     none (bounded: one field per live job that failed at least once, holding its last 10 attempt errors (4 KiB of text each at most), deleted with its state field)        job ID -> JSON array of its last 10 attempt errors, oldest first: at (server ms), attempt (retry count after it), error; a dead letter takes them along
//	queue:{{queue_name}}:events              STREAM   none (bounded: capped at about the WithEvents length (XADD MAXLEN ~))                                                                                                  lifecycle events (WithEvents): kind (enqueued, started, progress, completed, failed, retried, dead, cancelled), job_id, at (server ms), delivery, retry_count, error, progress
//	queue:{{queue_name}}:executions          LIST     none (bounded: one wake-up token, plus jobs pushed in the AI platform's format until a dequeue adopts them)                                                            wake-up list idle consumers block on (BLMOVE to the inbox); jobs pushed here in the AI platform's format are adopted
//	queue:{{queue_name}}:flows               HASH     none (bounded: one field per parent waiting for its children and one per child of such a parent, deleted as the children finish (or are deleted or purged))            flows (EnqueueFlow): p:{parent_id} -> children left, dead-child policy, parent's priority; c:{child_id} -> parent ID
//	queue:{{queue_name}}:gactive:{group}     ZSET     24h (the longest lease) after the group's last lease; members no longer in the active set are dropped by the next dequeue of the group                                 group concurrency (WithGroupLimits): job IDs of the group leased, scored by lease deadline at lease time; a member counts while it is in the active set
//	queue:{{queue_name}}:grate:{group}       STRING   one period past the end of its rate window (the group's rate period; the value names its window)                                                                       group rate (WithGroupLimits): "window,count": the current fixed window (Unix ms / period) and the group's jobs leased in it
//	queue:{{queue_name}}:inbox               LIST     none (bounded: what blocked consumers took from the wake list, emptied by the dequeue a consumer makes after its wait (WithSeedConsumers: one wake-up token))          wake list elements a blocked consumer moved out (BLMOVE), so a job pushed in the AI platform's format is never popped and lost; with WithSeedConsumers, the wake-up token idle consumers block on, kept off the executions list
//	queue:{{queue_name}}:jobs                HASH     none (bounded: one field per live job, deleted on ack, dead letter or delete)                                                                                          job ID -> job JSON in the AI platform's item format
//	queue:{{queue_name}}:priority:{level}    ZSET     none (bounded: one member per pending or scheduled job; empty sets vanish)                                                                                             job IDs of one priority (high|normal|low) scored by ready time: pending, delayed, retrying
//	queue:{{queue_name}}:progress            HASH     none (bounded: one field per job in flight that reported progress (SetProgress), deleted when its delivery is settled or the job is dead-lettered, deleted or purged)  job ID -> delivery and the progress JSON its handler reported (SetProgress)
//	queue:{{queue_name}}:rate                STRING   one period past the end of its rate window (WithRateLimit's period; the value names its window, so a later one reads as empty)                                         WithRateLimit: "window,count": the current fixed window (Unix ms / period) and the jobs leased in it
//	queue:{{queue_name}}:reply:{request_id}  STRING   3m                                                                                                                                                                     first outcome of a write request (JSON), returned to a resend of the same request
//	queue:{{queue_name}}:schedules           HASH     none (bounded: one field per periodic job, removed by Unschedule)                                                                                                      periodic jobs (Schedule): name -> JSON definition (next due tick, cron or interval spec, time zone, missed-tick policy, payload)
//	queue:{{queue_name}}:state               HASH     none (bounded: one field per live job delivered at least once, deleted with its jobs field)                                                                            job ID -> delivery, retry count, max retries, priority, last error (from the first delivery on)
//	queue:{{queue_name}}:unique:{job_id}     STRING   the job's uniqueness window                                                                                                                                            refuses a second enqueue of the job ID within the window
//	queue:{{queue_name}}:cancels             CHANNEL  -                                                                                                                                                                      sharded (SPUBLISH) on the queue's slot by Cancel: the job ID, so that the worker running it cancels its handler at once
//
// The {{x}} marks the hash tag: queue:{{queue_name}}:jobs is written
// queue:{n8n}:jobs. With keys.Namespace.NoHashTags the keys are
// byte-identical to the AI platform's job queues (standalone server only;
// docs/ai-platform.md).
//
// # Sharing the list with Node
//
// With WithSeedConsumers the executions list holds only the AI
// platform's items (the wake-up token moves to the inbox,
// queue:{queue_name}:inbox):
// every dequeue adopts the items a Node producer LPUSHed, and Handoff
// LPUSHes a job in the item's format, the payload's fields at its top
// level, for a Node consumer that RPOPs it ("Sharing the list with Node"
// in docs/queue.md).
//
// The long form (every guarantee in full, design, failover figures, how
// the AI platform's layout maps, limits) is
// https://github.com/redschema/redschema/blob/main/docs/queue.md.
package queue
