// Package queue is a reliable typed job queue on seed 001's layout (§5,
// "Database 2: Job Queues"): priorities, delays, leases, retries with
// backoff, a dead-letter list, exact statistics, and a worker runner.
//
//	q, err := queue.New[Execution](rdb, "n8n")
//	id, err := q.Enqueue(ctx, Execution{WorkflowID: "wf-1"}, &queue.EnqueueOptions{Priority: queue.High})
//	err = q.Run(ctx, func(ctx context.Context, j *queue.Job[Execution]) error { ... }, 8)
//
// # Keys
//
// Every key of one queue carries the queue name as its hash tag, so each
// script touches a single cluster slot ("queue:{n8n}:jobs"; with hash tags
// off, "queue:n8n:jobs"). The queue names "stats" and "dlq" are refused:
// with hash tags off, "queue:stats:executions" would be both the stats of a
// queue called "executions" and a key of a queue called "stats".
//
// | Key pattern | Type | TTL | Purpose |
// |---|---|---|---|
// | `queue:{{queue_name}}:priority:{level}` | ZSET | none (bounded: pending and scheduled jobs) | job IDs of one priority (high, normal, low) scored by ready time: pending, delayed, retrying |
// | `queue:{{queue_name}}:jobs` | HASH | none (bounded: one field per live job) | job ID -> job JSON in seed 001's item format |
// | `queue:{{queue_name}}:state` | HASH | none (bounded: one field per live job) | job ID -> delivery count, retry count, max retries, priority, last error |
// | `queue:{{queue_name}}:active` | ZSET | none (bounded: jobs in flight) | leases: in-flight job IDs scored by lease deadline (server ms) |
// | `queue:{{queue_name}}:executions` | LIST | 1m, refreshed; at most one element | wake-up list idle consumers block on (BLPOP) |
// | `queue:{{queue_name}}:unique:{job_id}` | STRING | the job's uniqueness window | refuses a second enqueue of the ID within the window |
// | `queue:stats:{{queue_name}}` | HASH | none (one per queue) | total_processed, total_failed, avg_process_time_ms, last_processed_at, total_enqueued, total_dead, total_dead_trimmed, total_process_time_us, fifo_seq, delivery_seq |
// | `queue:dlq:{{queue_name}}` | LIST | 7d, refreshed on push; trimmed to 10,000 entries (WithDeadLetterCap) | dead letters, newest first |
//
// Stored job JSON (the jobs hash) follows seed 001's item format, with the
// caller's payload (the seed's workflow_id, trigger_type, trigger_data)
// under "payload":
//
//	{"id":"uuid","payload":{...},"priority":0,"created_at":"2026-01-16T10:00:00Z","retry_count":0,"max_retries":5}
//
// "priority" is 1 (High), 0 (Normal) or -1 (Low). "retry_count" is the
// count when the job was written; the live count is in the state hash and
// in Job.RetryCount. A dead-letter entry is
// {"id","error","failed_at" (Unix ms),"retry_count","max_retries","level","job"}.
//
// # What changed from the seed, and why
//
//   - The seed's FIFO list queue:n8n:executions is popped by a worker, so a
//     worker that dies after the pop loses the job. Jobs are instead leased:
//     a dequeue script moves the ID from a priority set to the active set
//     scored by a lease deadline (server TIME), and the job stays in the
//     jobs hash until Ack. Every dequeue first returns expired leases to
//     ready (at-least-once: a crashed worker's jobs come back, counted as a
//     failed attempt). Every delivery gets a lease token from a per-queue
//     sequence (delivery_seq in the stats hash), and Ack, Nack, Release
//     and Extend check it, so a worker whose lease was recovered, or whose
//     job was deleted and re-enqueued under the same ID or requeued from
//     the dead letters, cannot settle the new delivery.
//   - The seed keeps both a FIFO list and priority sorted sets "scored by
//     time". Only the sorted sets hold jobs: score = ready time in ms × 1000
//     plus a sequence within the millisecond, which gives FIFO within a
//     priority (exact up to 1000 enqueues per ms and priority), and delays
//     and retry backoff for free (a delayed job is one whose score is in
//     the future). The executions list keeps the role consumers use it for
//     in the seed, blocking: it holds at most one wake-up token, pushed when
//     a job becomes ready, on which idle consumers BLPOP (for at most 250 ms
//     at a time, so delayed jobs and expired leases are picked up too).
//     Losing a token costs latency, never a job.
//   - The stats hash is written by the same scripts that move jobs, so it
//     is exact: total_processed counts acks, total_failed failed attempts
//     (errors, panics, Nack, expired leases), total_dead dead letters, and
//     avg_process_time_ms is total_process_time_us / total_processed.
//     last_processed_at is Unix ms of the server clock. fifo_seq is the
//     last priority score given to a job enqueued ready (the FIFO sequence);
//     delivery_seq the last lease token handed out.
//   - The dead-letter list has the seed's 7-day TTL, refreshed on each push,
//     and is trimmed to its cap in the same script, so it cannot grow
//     without bound; total_dead_trimmed counts the entries the trim
//     dropped: the list holds total_dead - total_dead_trimmed entries,
//     less those Delete, Purge and Requeue took out (none once its TTL
//     ran out).
//
// # Round trips
//
// Enqueue, TryDequeue, Ack, Nack, Release, Extend, Requeue, Delete, Purge,
// Peek, List and Stats are one script each (one round trip); Dequeue is
// TryDequeue plus, while nothing is ready, a BLPOP of at most 250 ms. EnqueueBatch is one
// pipeline. Run leases up to 2×concurrency jobs per dequeue script and
// writes all the outcomes ready at once with one settle script, so a busy
// queue costs well under one round trip per job.
//
// # Errors
//
// ErrDuplicate, ErrEmpty, ErrLeaseLost, ErrNotFound, ErrInvalid and
// ErrTooLarge are matched with errors.Is. Bad input is refused before
// anything is written. Data in Redis that does not decode gives an error
// matching keys.ErrCorrupt that names the key; a job whose stored JSON does
// not decode is moved to the dead-letter list with the reason instead of
// being redelivered forever.
package queue
