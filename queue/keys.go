package queue

import (
	"time"

	"github.com/redschema/redschema/keys"
)

// replayWindow is how long a write's reply memo keeps its first outcome
// for a resend of the same request (queue:{queue_name}:reply:{request_id}):
// a resend that reaches the server within it reports that outcome and
// writes nothing. It is longer than go-redis v9's whole default retry
// schedule (at worst about 2 min 8 s from the first run to the last
// resend; see docs/queue.md) and than any call whose context deadline is
// shorter.
const replayWindow = 3 * time.Minute

// dailyTTL is the lifetime of a day's counts (queue:{queue_name}:daily:{day}):
// the 90 days Inspector.Daily reads and the day in progress. lib.lua's
// count_day sets it (DAILY_TTL_MS there; a test holds them equal).
const dailyTTL = 91 * 24 * time.Hour

// maxDays is the most days Inspector.Daily reads.
const maxDays = 90

// Every key of one queue carries the queue name as its hash tag, so each
// script touches one cluster slot.
var (
	wakeKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:executions", Type: keys.List,
		Persistent: "bounded: one wake-up token, plus jobs pushed in the AI platform's format until a dequeue adopts them",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues, Seed: "001 §5",
		Purpose: "wake-up list idle consumers block on (BLMOVE to the inbox); jobs pushed here in the AI platform's format are adopted",
	})
	inboxKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:inbox", Type: keys.List,
		Persistent: "bounded: what blocked consumers took from the wake list, emptied by the dequeue a consumer makes after its wait (WithSeedConsumers: one wake-up token)",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "wake list elements a blocked consumer moved out (BLMOVE), so a job pushed in the AI platform's format is never popped and lost; with WithSeedConsumers, the wake-up token idle consumers block on, kept off the executions list",
	})
	replyKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:reply:{request_id}", Type: keys.String, TTL: replayWindow,
		Tag: "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "first outcome of a write request (JSON), returned to a resend of the same request",
	})
	priorityKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:priority:{level}", Type: keys.ZSet,
		Persistent: "bounded: one member per pending or scheduled job; empty sets vanish",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues, Seed: "001 §5",
		Purpose: "job IDs of one priority (high|normal|low) scored by ready time: pending, delayed, retrying",
	})
	jobsKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:jobs", Type: keys.Hash,
		Persistent: "bounded: one field per live job, deleted on ack, dead letter or delete",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "job ID -> job JSON in the AI platform's item format",
	})
	stateKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:state", Type: keys.Hash,
		Persistent: "bounded: one field per live job delivered at least once, deleted with its jobs field",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "job ID -> delivery, retry count, max retries, priority, last error (from the first delivery on)",
	})
	errorsKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:errors", Type: keys.Hash,
		Persistent: "bounded: one field per live job that failed at least once, holding its last 10 attempt errors (4 KiB of text each at most), deleted with its state field",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "job ID -> JSON array of its last 10 attempt errors, oldest first: at (server ms), attempt (retry count after it), error; a dead letter takes them along",
	})
	activeKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:active", Type: keys.ZSet,
		Persistent: "bounded: one member per job in flight",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "leases: in-flight job IDs scored by lease deadline (server ms)",
	})
	uniqueKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:unique:{job_id}", Type: keys.String,
		TTLNote: "the job's uniqueness window",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "refuses a second enqueue of the job ID within the window",
	})
	scheduleKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:schedules", Type: keys.Hash,
		Persistent: "bounded: one field per periodic job, removed by Unschedule",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "periodic jobs (Schedule): name -> JSON definition (next due tick, cron or interval spec, time zone, missed-tick policy, payload)",
	})
	progressKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:progress", Type: keys.Hash,
		Persistent: "bounded: one field per job in flight that reported progress (SetProgress), deleted when its delivery is settled or the job is dead-lettered, deleted or purged",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "job ID -> delivery and the progress JSON its handler reported (SetProgress)",
	})
	doneKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:done", Type: keys.Hash,
		TTLNote: "the queue's retention (WithRetention), refreshed on each write; entries past it or over the cap are trimmed in the script that adds one",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "finished jobs kept for WithRetention: job ID -> JSON (state, finish time, result, last progress, job)",
	})
	doneAtKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:done_at", Type: keys.ZSet,
		TTLNote: "the queue's retention (WithRetention), refreshed on each write; trimmed with the done hash",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "index of the done hash: job ID scored by when its entry expires (server ms)",
	})
	cancelKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:cancel", Type: keys.Hash,
		Persistent: "bounded: one field per job in flight that Cancel was asked to stop, deleted when the job is settled (and by later Cancels once the job is gone)",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "job ID -> server time (ms) of a Cancel of the job in flight; Run's workers cancel its handler's context",
	})
	cancelChannel = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:cancels", Type: keys.Channel,
		Tag: "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "sharded (SPUBLISH) on the queue's slot by Cancel: the job ID, so that the worker running it cancels its handler at once",
	})
	eventsKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:events", Type: keys.Stream,
		Persistent: "bounded: capped at about the WithEvents length (XADD MAXLEN ~)",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "lifecycle events (WithEvents): kind (enqueued, started, progress, completed, failed, retried, dead, cancelled), job_id, at (server ms), delivery, retry_count, error, progress",
	})
	flowsKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:flows", Type: keys.Hash,
		Persistent: "bounded: one field per parent waiting for its children and one per child of such a parent, deleted as the children finish (or are deleted or purged)",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "flows (EnqueueFlow): p:{parent_id} -> children left, dead-child policy, parent's priority; c:{child_id} -> parent ID",
	})
	rateKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:rate", Type: keys.String,
		TTLNote: "one period past the end of its rate window (WithRateLimit's period; the value names its window, so a later one reads as empty)",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "WithRateLimit: \"window,count\": the current fixed window (Unix ms / period) and the jobs leased in it",
	})
	groupActiveKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:gactive:{group}", Type: keys.ZSet,
		TTLNote: "24h (the longest lease) after the group's last lease; members no longer in the active set are dropped by the next dequeue of the group",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "group concurrency (WithGroupLimits): job IDs of the group leased, scored by lease deadline at lease time; a member counts while it is in the active set",
	})
	groupRateKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:grate:{group}", Type: keys.String,
		TTLNote: "one period past the end of its rate window (the group's rate period; the value names its window)",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "group rate (WithGroupLimits): \"window,count\": the current fixed window (Unix ms / period) and the group's jobs leased in it",
	})
	dailyKey = keys.MustCompile(keys.Pattern{
		Template: "queue:{queue_name}:daily:{day}", Type: keys.Hash, TTL: dailyTTL,
		TTLNote: "set when the day's hash is created (its first count); a queue keeps at most 91 of them",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "processed and failed counts of one UTC day (yyyy-mm-dd of the server clock), written with total_processed and total_failed; read by Inspector.Daily",
	})
	statsKey = keys.MustCompile(keys.Pattern{
		Template: "queue:stats:{queue_name}", Type: keys.Hash,
		Persistent: "bounded: one hash of counters per queue",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues, Seed: "001 §5",
		Purpose: "total_processed, total_failed, avg_process_time_ms, last_processed_at (+ enqueued, dead, dead trimmed, FIFO and delivery sequences, paused flag, group round-robin cursor, groups the last whole read found)",
	})
	deadKey = keys.MustCompile(keys.Pattern{
		Template: "queue:dlq:{queue_name}", Type: keys.List, TTL: deadTTL,
		TTLNote: "refreshed on push; trimmed to the dead-letter cap",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues, Seed: "001 §5",
		Purpose: "dead letters: job JSON with its last error, newest first",
	})
)

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	return keys.Schema{
		Templates: []*keys.Template{wakeKey, inboxKey, replyKey, priorityKey, jobsKey, stateKey, errorsKey, activeKey, uniqueKey, scheduleKey, progressKey, doneKey, doneAtKey, cancelKey, cancelChannel, eventsKey, flowsKey, rateKey, groupActiveKey, groupRateKey, statsKey, dailyKey, deadKey},
		Decoders:  decoders(),
	}
}
