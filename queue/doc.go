// Package queue is a reliable typed job queue on Redis: priorities,
// delays, leases (visibility timeouts), retries with backoff, a
// dead-letter list, exact statistics, and a worker runner.
//
//	q, err := queue.New[Execution](rdb, "n8n")
//	id, err := q.Enqueue(ctx, Execution{WorkflowID: "wf-1"}, queue.WithPriority(queue.High))
//	err = q.Run(ctx, func(ctx context.Context, j *queue.Job[Execution]) error {
//		return execute(ctx, j.Payload) // nil acks; an error retries, then dead-letters
//	}, 8)
//
// # Guarantees
//
//   - One round trip per operation: Enqueue, TryDequeue, Ack, Nack,
//     Release, Extend, Requeue, Delete, Purge, Peek, List and Stats are one
//     Lua script each; EnqueueBatch is one pipeline; Dequeue is TryDequeue
//     plus, while nothing is ready, a blocking wait of at most 250 ms. Run
//     leases up to 2×concurrency jobs per script and writes all the
//     outcomes ready at once with one script.
//   - Auto-pipelining: Enqueue calls made at once by many goroutines share
//     round trips (at most DefaultPipelines in flight per Queue, see
//     WithPipelining); each is still its own atomic script with its own
//     reply, and a lone call goes out at once.
//   - Atomic and cluster-safe: every key of a queue carries the queue name
//     as its hash tag, so each script touches one slot.
//   - At-least-once delivery: a job stays in the jobs hash until it is
//     acked, dead-lettered or deleted; a job whose lease runs out comes
//     back (counted as a failed attempt). Every delivery has its own lease
//     token, so a worker whose lease was recovered never settles a later
//     delivery (ErrLeaseLost).
//   - Idempotent under retry: every write (Enqueue, EnqueueBatch, a
//     dequeue, Ack, Nack, Release, Extend, Requeue, Delete, Purge) carries
//     a request ID made before its first send, and its script stores the
//     outcome under queue:{queue_name}:reply:{request_id} for one minute.
//     go-redis resends a command whose reply was lost after the server
//     ran it, and resends a whole pipeline (an auto-pipelined batch of
//     Enqueue calls, an EnqueueBatch) when its connection broke; the
//     resend gets the first outcome back: a fresh job is reported
//     enqueued (never ErrDuplicate), an ack done (never ErrLeaseLost), a
//     dequeue returns the same job, a purge deletes nothing more. A second
//     call is a new request and is answered on its own (a second Ack of a
//     delivery is ErrLeaseLost). WithoutReplayMemo drops the memo of an
//     enqueue with a generated ID, whose resend finds the job itself
//     instead, unless the job already left the queue (see the option).
//   - Server time decides every lease, delay and retry. A lease never ends
//     on the server before the holder's local deadline (the lease counted
//     from before its request): the deadline is the server time rounded up
//     to the millisecond plus the lease, and a lease is recovered only
//     once the server time is strictly past it.
//   - Bounds: delays, process-at times and uniqueness windows up to
//     MaxDelay (366 days: scores are ms × 1000 and must stay exact in a
//     double), leases in [MinLease, MaxLease], retries up to
//     MaxRetriesLimit, payloads up to WithMaxPayload; beyond is ErrInvalid
//     before anything is written.
//   - Bounded memory: the dead-letter list has a TTL and a cap, the
//     wake-up list holds one token, and every other key holds only live
//     jobs (see the table).
//   - Errors: ErrDuplicate, ErrEmpty, ErrLeaseLost, ErrNotFound,
//     ErrTooLarge and ErrInvalid (bad input, before any I/O; a bad job ID
//     also matches keys.ErrInvalidKey), matched with errors.Is. Data the
//     package did not write is an error matching keys.ErrCorrupt that names
//     the exact key (a key of the wrong type fails a script before it
//     writes any job, lease or count: each script reads a key before its
//     first write to it, or reads its type first on the rare paths that
//     write keys the common path does not read, or, in Enqueue, writes it
//     with pcall and undoes the writes before it when that fails; only a
//     consumed wake-up token may have moved. A stats
//     counter that is not a count fails Enqueue and the dequeue and settle
//     scripts before they write a job, lease or other count). Where the
//     queue can go on, it repairs and still reports: a job whose state or
//     JSON does not parse is dead-lettered with the reason, a queued ID
//     without its job is dropped, a lease deadline further than MaxLease
//     is recovered; TryDequeue then returns that error, never ErrEmpty,
//     and Run passes it to WithErrorHandler. A network failure, a timeout
//     or a cluster error is returned as such, never as a sentinel. Every error names the operation and the
//     key; redis.Nil never escapes.
//   - Failover: replication is asynchronous, so without WithDurability a
//     failover can lose acknowledged enqueues and acks (see Failover and
//     durability); with it, an enqueue or an outcome that returned nil is
//     on the replicas asked for, and one that did not is ErrNotDurable.
//   - Deadlines: create the client with ContextTimeoutEnabled: true (New
//     refuses one without), or go-redis ignores context deadlines while a
//     server hangs.
//
// # Keys
//
//	Key pattern                              Type     TTL                                                                                                                                                          Purpose
//	queue:dlq:{{queue_name}}                 LIST     7d (refreshed on push; trimmed to the dead-letter cap)                                                                                                       dead letters: job JSON with its last error, newest first
//	queue:stats:{{queue_name}}               HASH     none (bounded: one hash of counters per queue)                                                                                                               total_processed, total_failed, avg_process_time_ms, last_processed_at (+ enqueued, dead, dead trimmed, FIFO and delivery sequences, paused flag, group round-robin cursor, groups the last whole read found)
//	queue:{{queue_name}}:active              ZSET     none (bounded: one member per job in flight)                                                                                                                 leases: in-flight job IDs scored by lease deadline (server ms)
//	queue:{{queue_name}}:cancel              HASH     none (bounded: one field per job in flight that Cancel was asked to stop, deleted when the job is settled (and by later Cancels once the job is gone))       job ID -> server time (ms) of a Cancel of the job in flight; Run's workers cancel its handler's context
//	queue:{{queue_name}}:done                HASH     the queue's retention (WithRetention), refreshed on each write; entries past it or over the cap are trimmed in the script that adds one                      finished jobs kept for WithRetention: job ID -> JSON (state, finish time, result, last progress, job)
//	queue:{{queue_name}}:done_at             ZSET     the queue's retention (WithRetention), refreshed on each write; trimmed with the done hash                                                                   index of the done hash: job ID scored by when its entry expires (server ms)
//	queue:{{queue_name}}:events              STREAM   none (bounded: capped at about the WithEvents length (XADD MAXLEN ~))                                                                                        lifecycle events (WithEvents): kind (enqueued, started, progress, completed, failed, retried, dead, cancelled), job_id, at (server ms), delivery, retry_count, error, progress
//	queue:{{queue_name}}:executions          LIST     none (bounded: one wake-up token, plus jobs pushed in the seed's format until a dequeue adopts them)                                                         wake-up list idle consumers block on (BLMOVE to the inbox); seed-format jobs pushed here are adopted
//	queue:{{queue_name}}:flows               HASH     none (bounded: one field per parent waiting for its children and one per child of such a parent, deleted as the children finish (or are deleted or purged))  flows (EnqueueFlow): p:{parent_id} -> children left, dead-child policy, parent's priority; c:{child_id} -> parent ID
//	queue:{{queue_name}}:gactive:{group}     ZSET     MaxLease (24h) after the group's last lease; members no longer in the active set are dropped by the next dequeue of the group                                group concurrency (WithGroupLimits): job IDs of the group leased, scored by lease deadline at lease time; a member counts while it is in the active set
//	queue:{{queue_name}}:grate:{group}       STRING   one period past the end of its rate window (the group's rate period; the value names its window)                                                             group rate (WithGroupLimits): "window,count": the current fixed window (Unix ms / period) and the group's jobs leased in it
//	queue:{{queue_name}}:inbox               LIST     none (bounded: what blocked consumers took from the wake list, emptied by the dequeue a consumer makes after its wait)                                       wake list elements a blocked consumer moved out (BLMOVE), so a seed-format job is never popped and lost
//	queue:{{queue_name}}:jobs                HASH     none (bounded: one field per live job, deleted on ack, dead letter or delete)                                                                                job ID -> job JSON in seed 001's item format
//	queue:{{queue_name}}:priority:{level}    ZSET     none (bounded: one member per pending or scheduled job; empty sets vanish)                                                                                   job IDs of one priority (high|normal|low) scored by ready time: pending, delayed, retrying
//	queue:{{queue_name}}:progress            HASH     none (bounded: one field per job in flight that reported progress (SetProgress), deleted when its delivery is settled)                                       job ID -> delivery and the progress JSON its handler reported (SetProgress)
//	queue:{{queue_name}}:rate                STRING   one period past the end of its rate window (WithRateLimit's period; the value names its window, so a later one reads as empty)                               WithRateLimit: "window,count": the current fixed window (Unix ms / period) and the jobs leased in it
//	queue:{{queue_name}}:reply:{request_id}  STRING   1m                                                                                                                                                           first outcome of a write request (JSON), returned to a resend of the same request
//	queue:{{queue_name}}:schedules           HASH     none (bounded: one field per periodic job, removed by Unschedule)                                                                                            periodic jobs (Schedule): name -> JSON definition (next due tick, cron or interval spec, time zone, missed-tick policy, payload)
//	queue:{{queue_name}}:state               HASH     none (bounded: one field per live job delivered at least once, deleted with its jobs field)                                                                  job ID -> delivery, retry count, max retries, priority, last error (from the first delivery on)
//	queue:{{queue_name}}:unique:{job_id}     STRING   the job's uniqueness window                                                                                                                                  refuses a second enqueue of the job ID within the window
//	queue:{{queue_name}}:cancels             CHANNEL  -                                                                                                                                                            sharded (SPUBLISH) on the queue's slot by Cancel: the job ID, so that the worker running it cancels its handler at once
//
// # Compatibility with existing layouts
//
// Keys and values follow seed 001 §5 ("Database 2: Job Queues"), with
// these changes:
//
//   - Hash tags: the queue name is the tag ("queue:{n8n}:jobs",
//     "queue:stats:{n8n}"), so a queue's keys share a slot;
//     keys.Namespace.NoHashTags gives the seed's exact bytes on a
//     standalone server. The queue names "stats" and "dlq" are refused:
//     with hash tags off, queue:stats:executions would be both the stats
//     of a queue called "executions" and a key of a queue called "stats".
//   - The seed's FIFO list queue:n8n:executions is popped by a worker, so
//     a worker that dies after the pop loses the job. Jobs are instead
//     leased: a dequeue script moves the ID from a priority set to the
//     active set scored by a lease deadline, and the job stays in the jobs
//     hash until Ack. The list keeps the role consumers use it for,
//     blocking: it holds a wake-up token ("1"), and idle consumers wait on
//     it with BLMOVE into queue:{queue_name}:inbox, so whatever they take
//     stays in Redis. Enqueue pushes the token when the list is empty,
//     checking at the first enqueue of each millisecond and at the first
//     one after a dequeue found nothing ready (before a consumer can wait,
//     it runs such a dequeue; jobs enqueued in between are found by the
//     consumer the first one woke, which dequeues until nothing is
//     ready). It has no TTL (a TTL could expire a job a seed producer
//     pushed there).
//   - Jobs from an existing producer: an element of the list (or the
//     inbox) in the seed's item format, a JSON object pushed with LPUSH,
//     is adopted by the next dequeue, oldest first, as a job of the
//     queue: its "id" (or a generated one), its "priority" (> 0 High,
//     < 0 Low), its "created_at" when it is RFC 3339, its "retry_count",
//     the queue's default retries, and the whole object as the payload (so
//     a payload type with the seed's fields, workflow_id, trigger_type and
//     trigger_data, decodes it). An element that is not a JSON object, or
//     whose ID is live, is dead-lettered with the reason: nothing is
//     dropped. To migrate from such a producer, point it at this queue's
//     list (queue:{n8n}:executions with hash tags on; byte-identical
//     queue:n8n:executions with keys.Namespace{NoHashTags: true} on a
//     standalone server) and run consumers of this package: jobs already
//     in the list and jobs pushed later are adopted. Then switch the
//     producer to Enqueue, which gives IDs, delays and uniqueness.
//   - Only the priority sorted sets order jobs (the seed keeps both a list
//     and the sets "scored by time"): score = ready time in ms × 1000 plus
//     a sequence within the millisecond, which gives FIFO within a
//     priority (exact up to 1000 enqueues per ms and priority), and delays
//     and retry backoff for free.
//   - queue:stats:{queue_name} keeps the seed's fields (total_processed,
//     total_failed, avg_process_time_ms, last_processed_at, the last in
//     Unix ms of the server clock) and adds total_dead,
//     total_dead_trimmed, total_process_time_us, delivery_seq, and enq_seq
//     and enq_skipped: enq_seq is the FIFO sequence (the last score given,
//     plus one per enqueue, jumping to the current millisecond when time
//     has moved on) and enq_skipped adds up its jumps, so that
//     enq_seq - enq_skipped counts the enqueues with one HINCRBY per
//     enqueue (Stats.TotalEnqueued; plus total_enqueued, which earlier
//     versions counted instead).
//   - queue:dlq:{queue_name} keeps the seed's 7-day TTL (refreshed on each
//     push) and is trimmed to a cap; an entry is
//     {"id","error","failed_at" (Unix ms),"retry_count","max_retries","level","job"}.
//
// Stored job JSON follows the seed's item format, with the caller's
// payload (the seed's workflow_id, trigger_type, trigger_data) under
// "payload":
//
//	{"id":"uuid","payload":{...},"priority":0,"created_at":"2026-01-16T10:00:00Z","retry_count":0,"max_retries":5}
//
// "priority" is 1 (High), 0 (Normal) or -1 (Low); "retry_count" is the
// count when the job was written (the live count is in the state hash and
// in Job.RetryCount).
//
// # Leases and retries
//
// TryDequeue (and Run) moves a job to the active set with a lease of the
// queue's visibility timeout (WithLease) and a lease token from a
// per-queue sequence (Job.Delivery); Ack, Nack, Release and Extend check
// it. The token lives in the job's entry of the state hash, which a job
// gets at its first delivery: until then (enqueued, never delivered) its
// state is "no delivery, no attempt", its JSON's max_retries and the
// priority of its set, read from the JSON's end ("max_retries":N}), so
// Enqueue writes no state entry. A job without a state entry whose JSON
// does not end so is dead-lettered as corrupt. Every dequeue first
// returns expired leases to ready: a crashed
// worker's job comes back, counted as a failed attempt, or goes to the
// dead-letter list after its last retry. Nack schedules a retry after the
// queue's Backoff (exponential with jitter by default). A job whose stored
// JSON does not decode is dead-lettered with the reason instead of being
// redelivered forever.
//
// # Periodic jobs
//
// Schedule stores a periodic job under a name in the queue's schedules
// hash: a 5-field cron expression read in a time zone (WithTimeZone) or
// a fixed interval ("@every 5m", ticks at multiples of it since the Unix
// epoch), a payload and a missed-tick policy. Schedules lists them,
// Schedule again replaces one (the same definition again changes
// nothing, so every instance may declare its schedules at start-up) and
// Unschedule removes one, all at run time. RunSchedules, run by any
// number of processes, enqueues the ticks: each pass reads the server
// time and the definitions (one script), and for a due tick runs one
// script that claims it, by a compare-and-set of the whole stored
// definition to one with the next tick, and enqueues its job with
// enqueue.lua's own code (run inside it as a function), so that exactly
// one caller claims each tick and the tick's job is enqueued with the
// claim or not at all. Tick times are server time; a tick's job ID is
// "name@tick" (Unix ms). Ticks happen only while a RunSchedules runs:
// the missed-tick policy says what a pass does on finding a tick more
// than one period late (every scheduler was down, or a pass ran late):
// Skip (the default) enqueues nothing for the missed ticks, CatchUpOnce
// enqueues one job for all of them; both go on from the first tick after
// now. A new or replaced definition starts from the first tick after the
// next pass. Proof: TestScheduleOncePerTickAcrossInstances (3 instances,
// 60 ticks, exactly the 60 tick jobs) on miniredis, a real server and
// the cluster.
//
// # Pause and resume
//
// Pause sets the stats hash's paused field (the server time of the
// pause); the dequeue script reads it and, while it is there, leases
// nothing, for every consumer in every process. Jobs in flight are left
// alone: their handlers finish and settle, and expired leases still come
// back to pending. Enqueues, Schedule ticks and the admin calls go on.
// Resume deletes the field and pushes a wake-up token, so a waiting
// consumer polls at once. Stats reports Paused and PausedAt.
//
// # Global limits and groups
//
// The dequeue script enforces the limits, in the atomic step that leases,
// for every consumer in every process:
//
//   - WithGlobalConcurrency(n): at most n jobs of the queue leased at
//     once. The count is the active set itself, after the script has
//     recovered expired leases (up to 100 per call, so a crashed worker's
//     place comes back at the next dequeue after its lease ends); an
//     ack, a failure, a release, a cancel or a delete frees a place at
//     once. Run's prefetched jobs hold leases, so they count.
//   - WithRateLimit(n, per): at most n jobs leased per fixed window of
//     per on the server clock ([k×per, (k+1)×per) in Unix ms), counted
//     in queue:{queue_name}:rate ("window,count"; it expires a period
//     after its window ends).
//   - InGroup(g) puts a job in a group (a tenant); WithGroupLimits sets
//     every group's concurrency and rate, WithGroupLimit one group's.
//     A group's leases are the members of queue:{queue_name}:gactive:{g}
//     still in the active set (others are dropped as they are read), so
//     its places free as the queue's do; its rate is counted as the
//     queue's, in queue:{queue_name}:grate:{g}. A ready job of a group
//     at its limit is skipped and keeps its place: the script looks at up
//     to GroupScan ready jobs (reading their JSON for the group), and
//     serves the groups it found in turn, by name, starting after the
//     last group served (the stats hash's group_rr), so a saturated
//     group neither blocks the jobs behind it nor starves another group.
//     A group with more than GroupScan ready jobs ahead of another's
//     hides those: the bound on what one dequeue reads. A dequeue that
//     has found a job stops reading (100 jobs at a time) once every
//     group it saw is at its limit, and so is every group that the last
//     whole read found (the stats hash's group_seen, trusted for 100 ms)
//     that it has not seen: a consumer prefetches more jobs than full
//     groups have room for, and reading on would only skip more of their
//     jobs. A group that appears further behind is found within 100 ms.
//
// A consumer that a limit holds back waits for the rate window to end or,
// for a concurrency limit, until a settle of an instance with limits
// pushes a wake-up token (each batch that ends a lease does), at most
// 250 ms. All of a queue's consumers should have the same limits: the
// script applies those of the caller. Without any limit the dequeue
// script reads no limit key and the settle script pushes no token: the
// plain path costs what it did.
//
// # Flows
//
// EnqueueFlow writes a parent job and its children in one script: the
// children are ready at once; the parent waits in the jobs hash, in no
// priority set, with its count of children left in the flows hash
// (queue:{queue_name}:flows, "p:" + its ID; each child has "c:" + its ID
// -> the parent). The script that makes a child leave the queue (the
// settle script's ack, cancel or dead letter, the dequeue script's dead
// letter of an expired lease) reads its parent there and counts it down
// in the same atomic step; the last one puts the parent in its priority
// set, so the parent runs once, after every child. A dead-lettered or
// cancelled child dead-letters the parent at once (FailParent, the
// default) or counts as finished (IgnoreDead), as OnDeadChild says.
// Delete of a child counts as a dead child; Delete of a waiting parent
// drops its entry and lets the children run; Purge of a child purges its
// waiting parent too. Every job of a flow is a job of the queue, on its
// slot. A settle batch reads the flows hash only when it exists (one
// EXISTS).
//
// # Results and progress
//
// A handler may call Job.SetProgress (JSON, at most MaxProgress bytes;
// only the lease holder can, one script) and Job.SetResult (JSON, at
// most MaxResult, written by the ack). Peek returns an Active job's
// progress. With WithRetention(d) the script that acks a job also copies
// it, with its result and last progress, into the queue's done hash,
// indexed by expiry in done_at; Peek and List(Completed) read it there
// for d. The same script drops the entries past their expiry and the
// oldest beyond WithRetentionCap (at most 1000 of each per call), and both
// keys expire d after the last write, so memory is bounded by the cap.
// Without WithRetention nothing is kept; the progress hash costs a
// settle batch one TYPE call.
//
// # Timeouts and cancellation
//
// WithTimeout stores a time limit in the job's envelope; Run's handler
// context ends that long after the handler starts, and the error it
// returns is a failed attempt like any other. Cancel removes a waiting
// job at once; for a job in flight it sets a flag in the cancel hash and
// SPUBLISHes the job ID on the queue's sharded channel, on the queue's
// slot. Every Run holds one SSUBSCRIBE connection to it and cancels the
// handler's context (cause ErrCancelled) as the message arrives; where
// sharded pub/sub is missing (Redis before 7.0, miniredis) Run polls the
// flags of its running jobs every CancelPoll instead, and a worker that
// missed the message (a reconnect) sees the flag at its next lease
// extension, whose reply reports it. A handler that returns an error
// after the cancel has its job leave the queue as cancelled
// (Stats.TotalCancelled, kept as Cancelled with WithRetention), not
// retried. TestCancelRunningJob proves the message path with a lease of
// an hour, so that no extension can deliver the cancel.
//
// # Middleware and tracing
//
// WithMiddleware wraps Run's handler (the first middleware outermost).
// WithHeaders puts a bounded map in the job's envelope ("headers"), which
// the handler and middleware read as Job.Headers. The sub-module
// queue/otelqueue (its own go.mod, so the core imports no OpenTelemetry)
// injects the W3C trace context into those headers at enqueue and
// extracts it in a middleware that runs the handler in a consumer span.
//
// # Events
//
// With WithEvents(n) the scripts that change a job record what they did
// on the queue's events stream (XADD MAXLEN ~ n, on the queue's slot, in
// the same atomic step): enqueued, started, progress, completed, failed
// followed by retried or dead, and cancelled. A settle batch's resend
// records nothing twice (its events are written with its other writes,
// after the reply memo is checked). ReadEvents reads them in order after
// a given event ID (one round trip, optionally blocking), so a reader that
// saves the last ID it handled resumes without a gap, unless the stream
// was trimmed past it: then it is told so (ErrEventsTrimmed, with the
// events from the oldest kept). Without WithEvents no script writes the
// stream.
//
// # Failover and durability
//
// A master acknowledges a write before its replicas have it. When a
// replica is promoted (the master died, or an operator ran CLUSTER
// FAILOVER TAKEOVER, which does not wait for the replica to catch up) the
// writes it had not received are gone, and so are the writes the old
// master acknowledged until it learned it was demoted. Without
// WithDurability a failover can therefore lose:
//
//   - acknowledged enqueues: Enqueue returned an ID and nil, and the job
//     never runs (total_enqueued ends below the jobs accepted);
//   - acknowledged acks and nacks: the job comes back from its lease and
//     runs again (delivery stays at-least-once; the job is not lost);
//   - dequeues: a delivered job is ready again and runs twice, possibly at
//     once, and its new delivery can get the same delivery token as the
//     lost one (the token sequence is lost too), so the first worker's
//     outcome can settle the second delivery;
//   - the reply memos, so a resend across the failover is answered afresh.
//
// Measured by the chaos tier (internal/chaos, TestTakeoverLosesNoDurableJob:
// 3 masters + 3 replicas on loopback, 4 producers enqueuing about 650
// jobs/s and 4 workers on one queue, 4 CLUSTER FAILOVER TAKEOVERs of its
// shard in about 40 s): 15 of 26,463 acknowledged enqueues lost, and 15
// jobs delivered again after an ack of them had returned nil (of 26,648),
// about 4 of each per takeover (9 to 19 enqueues over ten runs, 6 to 15
// acks over six). With WithDurability(1, 500*time.Millisecond): 0 of
// 2,470 enqueues and 0 of 2,723 acks lost, 0 in every run.
//
// WithDurability(n, timeout) sends each enqueue, leasing dequeue and
// outcome script with a WAIT n timeout in the same pipeline, on the same
// connection, to the queue's master (on a cluster, the master of the
// queue's slot), so the call returns nil only once n replicas have the
// write. On a healthy cluster this costs the replica's acknowledgement
// (on loopback it was lost in the noise of the shared test machine: a
// sequential Enqueue took 0.15-1.09 ms without, 0.16-1.15 ms with, over
// eight runs) and auto-pipelining for those calls. When fewer
// than n replicas acknowledge in time (no replica, or a replica resyncing
// after a failover: every durable write then waits its whole timeout, and
// throughput drops accordingly: the runs above with the option did a
// tenth of the writes), the call returns its result with an error
// matching ErrNotDurable: the write was done and may still be lost.
// Retrying it is safe: with the same WithID an enqueue that survived is
// ErrDuplicate, and a settle is idempotent. A dequeue that leased nothing
// is not reported; Requeue, Delete and Purge do not wait. A retry that a
// reply memo answers waits only for writes made on its own connection.
//
// # One queue, one slot
//
// Every key of a queue carries the queue name as its hash tag, so that a
// script can move a job between its sets atomically. The price is that one
// queue lives on one cluster slot, hence on one master: its throughput is
// bounded by one Redis core and its memory by one node, however many
// masters the cluster has. Spread the load over several queues (one per
// tenant, per job type, or name-0 .. name-N with producers choosing one by
// hash and workers running each); each is its own slot.
//
// Moving a slot moves its keys whole, and the source node is blocked while
// it serializes each key with MIGRATE: a big queue stalls every client of
// that node (all its slots, not only the queue's) for as long as its
// largest key, the jobs hash, takes. Measured on Redis 7.0.15 on loopback
// (internal/chaos, TestBigQueueMigration, small payloads, delayed jobs;
// REDIS_CHAOS_BIG_JOBS sets the size):
//
//	jobs      jobs hash  priority set  slot moved in  longest stall of the node
//	50,000    12 MB      7 MB          0.9-1.5 s      0.13-0.31 s
//	100,000   24 MB      14 MB         2.8-3.3 s      0.52-0.72 s
//	300,000   76 MB      43 MB         -              over 1 s: see below
//
// At 300,000 the stall passed the test cluster's 1 s cluster-node-timeout:
// the cluster declared the source failed and promoted its replica in the
// middle of the move (the migration then failed with CLUSTERDOWN); issue
// 21 measured a 1.3-1.5 s stall of every workload for that size. The
// reply memos (one per enqueue of the last minute) move too, as many small
// keys. Keep the node timeout well above the stall of your largest queue,
// keep queues that large off the slots you reshard, reshard them at a
// quiet time, or drain them first; a reshard interrupted halfway leaves
// the slot MIGRATING until an operator runs redis-cli --cluster fix (see
// the README's cluster section).
//
// # Statistics
//
// The stats hash is written by the same scripts that move jobs, so it is
// exact: total_processed counts acks, total_failed failed attempts
// (errors, panics, Nack, expired leases), total_dead dead letters, and
// avg_process_time_ms is total_process_time_us / total_processed.
// total_dead_trimmed counts the dead letters the cap dropped: the list
// holds total_dead - total_dead_trimmed entries, less those Delete, Purge
// and Requeue took out (none once its TTL ran out).
//
// # Memory
//
// Besides the live jobs, each write keeps its reply memo for one minute
// (about 100 bytes; a Run batch writes one per batch; none for an enqueue
// of a generated ID WithoutReplayMemo), and an idle queue
// keeps its stats hash and its one-element wake-up list.
//
// # Limits
//
// EnqueueBatch takes at most MaxBatch items, List returns at most MaxList
// jobs and Purge deletes at most MaxPurge per call; the dead-letter cap is
// at most MaxDeadCap. Each is tested at its maximum on a real Redis and a
// cluster, where Lua's stack is bounded.
package queue
