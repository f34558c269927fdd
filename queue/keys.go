package queue

import "github.com/redschema/redschema/keys"

// Every key of one queue carries the queue name as its hash tag, so each
// script touches one cluster slot.
var (
	wakeKey = keys.Register(keys.Pattern{
		Template: "queue:{queue_name}:executions", Type: keys.List, TTL: wakeTTL,
		TTLNote: "refreshed on push; at most one element",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues, Seed: "001",
		Purpose: "wake-up list idle consumers block on (BLPOP); one token, not the jobs",
	})
	priorityKey = keys.Register(keys.Pattern{
		Template: "queue:{queue_name}:priority:{level}", Type: keys.ZSet,
		Persistent: "bounded: one member per pending or scheduled job; empty sets vanish",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues, Seed: "001",
		Purpose: "job IDs of one priority (high|normal|low) scored by ready time: pending, delayed, retrying",
	})
	jobsKey = keys.Register(keys.Pattern{
		Template: "queue:{queue_name}:jobs", Type: keys.Hash,
		Persistent: "bounded: one field per live job, deleted on ack, dead letter or delete",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "job ID -> job JSON in seed 001's item format",
	})
	stateKey = keys.Register(keys.Pattern{
		Template: "queue:{queue_name}:state", Type: keys.Hash,
		Persistent: "bounded: one field per live job, deleted with its jobs field",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "job ID -> delivery, retry count, max retries, priority, last error",
	})
	activeKey = keys.Register(keys.Pattern{
		Template: "queue:{queue_name}:active", Type: keys.ZSet,
		Persistent: "bounded: one member per job in flight",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "leases: in-flight job IDs scored by lease deadline (server ms)",
	})
	uniqueKey = keys.Register(keys.Pattern{
		Template: "queue:{queue_name}:unique:{job_id}", Type: keys.String,
		TTLNote: "the job's uniqueness window",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues,
		Purpose: "refuses a second enqueue of the job ID within the window",
	})
	statsKey = keys.Register(keys.Pattern{
		Template: "queue:stats:{queue_name}", Type: keys.Hash,
		Persistent: "bounded: one hash of counters per queue",
		Tag:        "queue_name", Owner: "queue", Area: keys.Queues, Seed: "001",
		Purpose: "total_processed, total_failed, avg_process_time_ms, last_processed_at (+ enqueued, dead, dead trimmed, FIFO and delivery sequences)",
	})
	deadKey = keys.Register(keys.Pattern{
		Template: "queue:dlq:{queue_name}", Type: keys.List, TTL: DeadTTL,
		TTLNote: "refreshed on push; trimmed to the dead-letter cap",
		Tag:     "queue_name", Owner: "queue", Area: keys.Queues, Seed: "001",
		Purpose: "dead letters: job JSON with its last error, newest first",
	})
)
