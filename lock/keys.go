package lock

import (
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

// Resource types with a registered default TTL (the AI platform's common
// lock resources, docs/ai-platform.md). Pass them as the resourceType of Acquire and get their TTL
// from Client.DefaultTTL.
const (
	File        = "file"         // file processing, 60s
	Workflow    = "workflow"     // workflow execution, 300s
	UserSession = "user-session" // session creation for a user, 5s
	Cache       = "cache"        // cache invalidation ("invalidate"), 10s
)

// StandardTTL is the lease used for resource types without a registered
// default (the AI platform's default lock duration, docs/ai-platform.md).
const StandardTTL = 30 * time.Second

// defaultMaxTTL is the longest lease a Client grants unless WithMaxTTL says
// otherwise (the AI platform's maximum lock TTL, docs/ai-platform.md).
const defaultMaxTTL = 300 * time.Second

// maxLease bounds WithMaxTTL: no lease, permit or fair waiter's place
// lasts longer than a day.
const maxLease = 24 * time.Hour

// maxFenceTTL bounds WithFenceTTL.
const maxFenceTTL = 30 * 24 * time.Hour

// maxInterval bounds the interval of Client.Interval.
const maxInterval = 366 * 24 * time.Hour

// maxPermits bounds a Semaphore's limit.
const maxPermits = 100000

// defaultFenceTTL is how long a resource's fence counter outlives its last
// acquisition unless WithFenceTTL says otherwise.
const defaultFenceTTL = time.Hour

var (
	lockKey = keys.MustCompile(keys.Pattern{
		Template: "lock:{resource_type}:{resource_id}",
		Type:     keys.String,
		TTL:      StandardTTL,
		TTLNote:  "lease duration, at most 300s",
		Tag:      "resource_id",
		Owner:    "lock",
		Area:     keys.Locks,
		Purpose:  "lease lock; value {owner_id}:{timestamp_ms}:{ttl_ms}",
		Seed:     "001 §9",
	})
	fenceKey = keys.MustCompile(keys.Pattern{
		Template: "lock:fence:{resource_type}:{resource_id}",
		Type:     keys.String,
		TTL:      defaultFenceTTL,
		TTLNote:  "at least this after the last acquisition, at most 1/4096 more",
		Tag:      "resource_id",
		Owner:    "lock",
		Area:     keys.Locks,
		Purpose:  "last fencing token issued for the resource (decimal)",
	})
	queueKey = keys.MustCompile(keys.Pattern{
		Template: "lock:queue:{resource_type}:{resource_id}",
		Type:     keys.List,
		TTLNote:  "latest waiter deadline",
		Tag:      "resource_id",
		Owner:    "lock",
		Area:     keys.Locks,
		Purpose:  "fair lock: waiter owner IDs in arrival order",
		Seed:     "001 §9",
	})
	waitersKey = keys.MustCompile(keys.Pattern{
		Template: "lock:waiters:{resource_type}:{resource_id}",
		Type:     keys.ZSet,
		TTLNote:  "latest waiter deadline",
		Tag:      "resource_id",
		Owner:    "lock",
		Area:     keys.Locks,
		Purpose:  "fair lock: waiter owner ID -> deadline (Unix ms) of its place in the queue",
	})
	semKey = keys.MustCompile(keys.Pattern{
		Template: "lock:sem:{resource_type}:{resource_id}",
		Type:     keys.ZSet,
		TTL:      defaultMaxTTL,
		TTLNote:  "latest permit expiry",
		Tag:      "resource_id",
		Owner:    "lock",
		Area:     keys.Locks,
		Purpose:  "semaphore: permit owner ID -> expiry (Unix ms)",
	})
	rwKey = keys.MustCompile(keys.Pattern{
		Template: "lock:rw:{resource_type}:{resource_id}",
		Type:     keys.String,
		TTL:      StandardTTL,
		TTLNote:  "writer's lease, at most 300s",
		Tag:      "resource_id",
		Owner:    "lock",
		Area:     keys.Locks,
		Purpose:  "read-write lock: the writer's lease; value {owner_id}:{timestamp_ms}:{ttl_ms}",
	})
	readersKey = keys.MustCompile(keys.Pattern{
		Template: "lock:readers:{resource_type}:{resource_id}",
		Type:     keys.ZSet,
		TTL:      defaultMaxTTL,
		TTLNote:  "latest reader expiry",
		Tag:      "resource_id",
		Owner:    "lock",
		Area:     keys.Locks,
		Purpose:  "read-write lock: reader owner ID -> expiry (Unix ms)",
	})
	writersKey = keys.MustCompile(keys.Pattern{
		Template: "lock:writers:{resource_type}:{resource_id}",
		Type:     keys.ZSet,
		TTLNote:  "latest waiting writer's deadline",
		Tag:      "resource_id",
		Owner:    "lock",
		Area:     keys.Locks,
		Purpose:  "read-write lock: waiting writer owner ID -> deadline (Unix ms) of its place; turns new readers away",
	})
	releasedChannel = keys.MustCompile(keys.Pattern{
		Template: "lock:released:{resource_type}:{resource_id}",
		Type:     keys.Channel,
		Tag:      "resource_id",
		Owner:    "lock",
		Area:     keys.Locks,
		Purpose:  "sharded (SPUBLISH) on the resource's slot by a release with WithWakeups; wakes its waiters",
	})
	cronKey = keys.MustCompile(keys.Pattern{
		Template:   "cron:last-run:{job_name}",
		Type:       keys.String,
		Persistent: "bounded: one key per cron job",
		Tag:        "job_name",
		Owner:      "lock",
		Area:       keys.Locks,
		Purpose:    "interval guard: start of the job's last run, Unix ms as a decimal string",
		Seed:       "004 §3",
	})
)

// The AI platform's common lock resources, registered as specialisations of
// lock:{resource_type}:{resource_id}: the same keys, with their own default
// TTL. The registry's table and audit name them; Client.DefaultTTL reads
// their TTL.
var resourceDefaults = map[string]*keys.Template{
	File: keys.MustCompile(keys.Pattern{Template: "lock:file:{file_id}", Type: keys.String, TTL: 60 * time.Second,
		TTLNote: "default; callers may pick any lease up to the max", Tag: "file_id", Owner: "lock", Area: keys.Locks,
		Purpose: "file processing lock (resource type \"file\")", Seed: "001 §9"}),
	Workflow: keys.MustCompile(keys.Pattern{Template: "lock:workflow:{workflow_id}", Type: keys.String, TTL: 300 * time.Second,
		TTLNote: "default; callers may pick any lease up to the max", Tag: "workflow_id", Owner: "lock", Area: keys.Locks,
		Purpose: "workflow execution lock (resource type \"workflow\")", Seed: "001 §9"}),
	UserSession: keys.MustCompile(keys.Pattern{Template: "lock:user-session:{user_id}", Type: keys.String, TTL: 5 * time.Second,
		TTLNote: "default; callers may pick any lease up to the max", Tag: "user_id", Owner: "lock", Area: keys.Locks,
		Purpose: "session creation lock (resource type \"user-session\"; the AI platform spells it lock:user:{user_id}:session)", Seed: "001 §9"}),
	Cache: keys.MustCompile(keys.Pattern{Template: "lock:cache:{operation}", Type: keys.String, TTL: 10 * time.Second,
		TTLNote: "default; callers may pick any lease up to the max", Tag: "operation", Owner: "lock", Area: keys.Locks,
		Purpose: "cache lock (resource type \"cache\"; the AI platform spells it lock:cache:invalidate)", Seed: "001 §9"}),
}

// Schema returns the package's key and channel patterns with the decoder
// of each key's values: compose it with the other packages' a program
// uses into a keys.Registry (keys.Compose) to audit, inspect or document
// their keyspace.
func Schema() keys.Schema {
	return keys.Schema{
		Templates: []*keys.Template{lockKey, fenceKey, queueKey, waitersKey, semKey, rwKey, readersKey, writersKey, releasedChannel, cronKey, resourceDefaults[File], resourceDefaults[Workflow], resourceDefaults[UserSession], resourceDefaults[Cache]},
		Decoders:  decoders(),
	}
}

// own is a registry of the package's own patterns, built once: the admin
// reads ask it which of them owns a key they scanned.
var own = call.OwnPatterns(Schema)
