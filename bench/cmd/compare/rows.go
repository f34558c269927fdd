package main

// rows are the summary's pairs: our benchmark, the peer's, and the median
// ratio (peer ns/op ÷ ours) the issues set as the goal (0: no goal, the
// row informs). The peers are the best-known library for the job, or,
// where there is none, the seed document's own commands (which are
// neither atomic nor pruning, and do a fraction of the work).
var rows = []row{
	{op: "ratelimit FixedWindow", peer: "ulule/limiter", ours: "BenchmarkRatelimitAllow/fixed/redschema", their: "BenchmarkRatelimitAllow/fixed/ulule", goal: 1.1},
	{op: "ratelimit GCRA", peer: "redis_rate", ours: "BenchmarkRatelimitAllow/gcra/redschema", their: "BenchmarkRatelimitAllow/gcra/redis_rate", goal: 1.1},
	{op: "ratelimit SlidingCounter", peer: "redis_rate", ours: "BenchmarkRatelimitAllow/swc/redschema", their: "BenchmarkRatelimitAllow/swc/redis_rate", goal: 1.1},
	{op: "ratelimit Sliding log", peer: "redis_rate", ours: "BenchmarkRatelimitAllow/sliding/redschema", their: "BenchmarkRatelimitAllow/sliding/redis_rate", goal: 1.1},
	{op: "ratelimit 3-rule policy", peer: "three peer calls", ours: "BenchmarkRatelimitAllow/policy3/redschema", their: "BenchmarkRatelimitAllow/policy3/peers3", goal: 1.0},
	{op: "ratelimit flood from one key (deny cache)", peer: "ours without the deny cache", ours: "BenchmarkRatelimitFlood/redschema-denycache", their: "BenchmarkRatelimitFlood/redschema", goal: 0},
	{op: "lock acquire+release", peer: "redislock", ours: "BenchmarkLock/redschema", their: "BenchmarkLock/redislock", goal: 1.0},
	{op: "lock acquire+release", peer: "redsync", ours: "BenchmarkLock/redschema", their: "BenchmarkLock/redsync", goal: 1.0},
	{op: "lock hand-off latency (release to waiter's return)", peer: "ours polling (default backoff)", ours: "BenchmarkLockHandoff/wakeups", their: "BenchmarkLockHandoff/polling", goal: 0},
	{op: "queue Enqueue", peer: "asynq", ours: "BenchmarkQueueEnqueue/redschema", their: "BenchmarkQueueEnqueue/asynq", goal: 1.0},
	{op: "queue Enqueue, without the reply memo (nor has asynq)", peer: "asynq", ours: "BenchmarkQueueEnqueue/redschema-nomemo", their: "BenchmarkQueueEnqueue/asynq", goal: 1.0},
	{op: "queue Enqueue steps, 1: asynq's script through our call layer", peer: "asynq", ours: "BenchmarkEnqueueSteps/1-asynq-script", their: "BenchmarkQueueEnqueue/asynq", goal: 0},
	{op: "queue Enqueue steps, 2: + one jobs hash and a ready set", peer: "asynq", ours: "BenchmarkEnqueueSteps/2-jobs-hash-and-ready-set", their: "BenchmarkQueueEnqueue/asynq", goal: 0},
	{op: "queue Enqueue steps, 3: + server time and the sequence", peer: "asynq", ours: "BenchmarkEnqueueSteps/3-server-time-and-sequence", their: "BenchmarkQueueEnqueue/asynq", goal: 0},
	{op: "queue Enqueue steps, 4: + the reply memo", peer: "asynq", ours: "BenchmarkEnqueueSteps/4-reply-memo", their: "BenchmarkQueueEnqueue/asynq", goal: 0},
	{op: "queue processing", peer: "asynq", ours: "BenchmarkQueueProcess/redschema", their: "BenchmarkQueueProcess/asynq", goal: 3.0},
	{op: "queue processing, limits off", peer: "asynq (server concurrency)", ours: "BenchmarkQueueProcessLimits/redschema/off", their: "BenchmarkQueueProcessLimits/asynq/server-concurrency", goal: 0},
	{op: "queue processing, global cap", peer: "asynq (server concurrency)", ours: "BenchmarkQueueProcessLimits/redschema/global-cap", their: "BenchmarkQueueProcessLimits/asynq/server-concurrency", goal: 0},
	{op: "queue processing, rate limit", peer: "asynq (server concurrency)", ours: "BenchmarkQueueProcessLimits/redschema/rate", their: "BenchmarkQueueProcessLimits/asynq/server-concurrency", goal: 0},
	{op: "queue processing, 4 capped groups", peer: "asynq (server concurrency)", ours: "BenchmarkQueueProcessLimits/redschema/groups", their: "BenchmarkQueueProcessLimits/asynq/server-concurrency", goal: 0},
	{op: "session Create", peer: "scs (goredisstore)", ours: "BenchmarkSession/Create/redschema", their: "BenchmarkSession/Create/scs-goredisstore", goal: 1.0, noPeer: scsNoCluster},
	{op: "session Create steps, 1: scs's SET in one script", peer: "scs (goredisstore)", ours: "BenchmarkCreateSteps/1-scs-set-in-one-script", their: "BenchmarkSession/Create/scs-goredisstore", goal: 0, noPeer: scsNoCluster},
	{op: "session Create steps, 2: the seed's hash instead", peer: "scs (goredisstore)", ours: "BenchmarkCreateSteps/2-seed-hash-layout", their: "BenchmarkSession/Create/scs-goredisstore", goal: 0, noPeer: scsNoCluster},
	{op: "session Create steps, 3: + server time", peer: "scs (goredisstore)", ours: "BenchmarkCreateSteps/3-server-time", their: "BenchmarkSession/Create/scs-goredisstore", goal: 0, noPeer: scsNoCluster},
	{op: "session Create steps, 4: + the user index", peer: "scs (goredisstore)", ours: "BenchmarkCreateSteps/4-user-index", their: "BenchmarkSession/Create/scs-goredisstore", goal: 0, noPeer: scsNoCluster},
	{op: "session Get (load + slide)", peer: "scs load + save", ours: "BenchmarkSession/LoadSave/redschema-Get", their: "BenchmarkSession/LoadSave/scs-goredisstore", goal: 1.0, noPeer: scsNoCluster},
	{op: "presence Heartbeat", peer: "seed 002 commands, pipelined", ours: "BenchmarkPresenceHeartbeat/redschema", their: "BenchmarkPresenceHeartbeat/seed002", goal: 1.0},
	{op: "presence Heartbeat, no online index (nor has the seed)", peer: "seed 002 commands, pipelined", ours: "BenchmarkPresenceHeartbeat/redschema-noindex", their: "BenchmarkPresenceHeartbeat/seed002", goal: 1.0},
	{op: "presence Heartbeat steps, 1: the seed's writes in one script", peer: "seed 002 commands, pipelined", ours: "BenchmarkHeartbeatSteps/1-seed-writes-in-one-script", their: "BenchmarkPresenceHeartbeat/seed002", goal: 0},
	{op: "presence Heartbeat steps, 2: + server time", peer: "seed 002 commands, pipelined", ours: "BenchmarkHeartbeatSteps/2-server-time", their: "BenchmarkPresenceHeartbeat/seed002", goal: 0},
	{op: "presence Heartbeat steps, 3: + the reads before the writes", peer: "seed 002 commands, pipelined", ours: "BenchmarkHeartbeatSteps/3-read-before-write", their: "BenchmarkPresenceHeartbeat/seed002", goal: 0},
	{op: "presence Heartbeat steps, 4: + the online index", peer: "seed 002 commands, pipelined", ours: "BenchmarkHeartbeatSteps/4-online-index", their: "BenchmarkPresenceHeartbeat/seed002", goal: 0},
	{op: "cache Get hit", peer: "go-redis/cache", ours: "BenchmarkCacheGetHit/redschema", their: "BenchmarkCacheGetHit/go-redis-cache", goal: 1.2},
	{op: "cache miss + load", peer: "go-redis/cache", ours: "BenchmarkCacheMissLoad/redschema", their: "BenchmarkCacheMissLoad/go-redis-cache", goal: 0},
	{op: "cache Set", peer: "go-redis/cache", ours: "BenchmarkCacheSet/redschema", their: "BenchmarkCacheSet/go-redis-cache", goal: 0},
	{op: "metrics recording (counter)", peer: "INCR per request", ours: "BenchmarkMetricsRecord/redschema/counter", their: "BenchmarkMetricsRecord/incr", goal: 100},
	{op: "metrics recording (counter)", peer: "client_golang Counter.Inc", ours: "BenchmarkMetricsRecord/redschema/counter", their: "BenchmarkMetricsRecord/client_golang/counter", goal: 0.5},
	{op: "metrics request (middleware)", peer: "INCR per request", ours: "BenchmarkMetricsRecord/redschema/http", their: "BenchmarkMetricsRecord/incr", goal: 0},
	{op: "sensor ingest", peer: "seed 003 commands", ours: "BenchmarkSensorIngest/redschema", their: "BenchmarkSensorIngest/seed003", goal: 0},
	{op: "sensor 24 h aggregation", peer: "seed 003 range + client", ours: "BenchmarkSensorAggregate24h/redschema", their: "BenchmarkSensorAggregate24h/seed003", goal: 0},
	{op: "chat assign", peer: "seed 000 commands", ours: "BenchmarkChatAssign/redschema", their: "BenchmarkChatAssign/seed000", goal: 0},
	{op: "chat append message", peer: "seed 000 commands", ours: "BenchmarkChatAppend/redschema", their: "BenchmarkChatAppend/seed000", goal: 0},
	{op: "aimemory append", peer: "RPUSH+LTRIM+EXPIRE pipeline", ours: "BenchmarkAIMemory/append/redschema", their: "BenchmarkAIMemory/append/naive", goal: 0},
	{op: "aimemory window (last 20)", peer: "LRANGE", ours: "BenchmarkAIMemory/window-last20/redschema", their: "BenchmarkAIMemory/window-last20/naive", goal: 0},
	{op: "scaling: ratelimit GCRA, 1 goroutines", peer: "redis_rate", ours: "BenchmarkScaling/ratelimit-gcra/redschema/g=1", their: "BenchmarkScaling/ratelimit-gcra/redis_rate/g=1", goal: 0},
	{op: "scaling: ratelimit GCRA, 16 goroutines", peer: "redis_rate", ours: "BenchmarkScaling/ratelimit-gcra/redschema/g=16", their: "BenchmarkScaling/ratelimit-gcra/redis_rate/g=16", goal: 0},
	{op: "scaling: ratelimit GCRA, 64 goroutines", peer: "redis_rate", ours: "BenchmarkScaling/ratelimit-gcra/redschema/g=64", their: "BenchmarkScaling/ratelimit-gcra/redis_rate/g=64", goal: 0},
	{op: "scaling: lock acquire+release, 1 goroutines", peer: "redislock", ours: "BenchmarkScaling/lock/redschema/g=1", their: "BenchmarkScaling/lock/redislock/g=1", goal: 0},
	{op: "scaling: lock acquire+release, 16 goroutines", peer: "redislock", ours: "BenchmarkScaling/lock/redschema/g=16", their: "BenchmarkScaling/lock/redislock/g=16", goal: 0},
	{op: "scaling: lock acquire+release, 64 goroutines", peer: "redislock", ours: "BenchmarkScaling/lock/redschema/g=64", their: "BenchmarkScaling/lock/redislock/g=64", goal: 0},
	{op: "saturation: ratelimit FixedWindow, 64 goroutines", peer: "the limit: redis-benchmark EVALSHA INCR+PEXPIRE, -c 64 -P 16", ours: "BenchmarkSaturation/ratelimit-fixed/g=64", their: satName(64), goal: 0.5, sat: 64, noPeer: satNoCluster},
	{op: "saturation: ratelimit FixedWindow, 256 goroutines", peer: "the limit: redis-benchmark EVALSHA INCR+PEXPIRE, -c 256 -P 16", ours: "BenchmarkSaturation/ratelimit-fixed/g=256", their: satName(256), goal: 0.5, sat: 256, noPeer: satNoCluster},
}

// scsNoCluster is why the session rows have no peer figures on a cluster.
const scsNoCluster = "scs's goredisstore takes a *redis.Client, not a cluster client"

// satNoCluster is why the saturation rows have no limit on a cluster.
const satNoCluster = "the compare command runs redis-benchmark on the standalone server only"
