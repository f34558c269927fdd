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
	{op: "queue processing", peer: "asynq", ours: "BenchmarkQueueProcess/redschema", their: "BenchmarkQueueProcess/asynq", goal: 3.0},
	{op: "queue processing, limits off", peer: "asynq (server concurrency)", ours: "BenchmarkQueueProcessLimits/redschema/off", their: "BenchmarkQueueProcessLimits/asynq/server-concurrency", goal: 0},
	{op: "queue processing, global cap", peer: "asynq (server concurrency)", ours: "BenchmarkQueueProcessLimits/redschema/global-cap", their: "BenchmarkQueueProcessLimits/asynq/server-concurrency", goal: 0},
	{op: "queue processing, rate limit", peer: "asynq (server concurrency)", ours: "BenchmarkQueueProcessLimits/redschema/rate", their: "BenchmarkQueueProcessLimits/asynq/server-concurrency", goal: 0},
	{op: "queue processing, 4 capped groups", peer: "asynq (server concurrency)", ours: "BenchmarkQueueProcessLimits/redschema/groups", their: "BenchmarkQueueProcessLimits/asynq/server-concurrency", goal: 0},
	{op: "session Create", peer: "scs (goredisstore)", ours: "BenchmarkSession/Create/redschema", their: "BenchmarkSession/Create/scs-goredisstore", goal: 1.0, noPeer: scsNoCluster},
	{op: "session Get (load + slide)", peer: "scs load + save", ours: "BenchmarkSession/LoadSave/redschema-Get", their: "BenchmarkSession/LoadSave/scs-goredisstore", goal: 1.0, noPeer: scsNoCluster},
	{op: "presence Heartbeat", peer: "seed 002 commands, pipelined", ours: "BenchmarkPresenceHeartbeat/redschema", their: "BenchmarkPresenceHeartbeat/seed002", goal: 1.0},
	{op: "presence Heartbeat, no online index (nor has the seed)", peer: "seed 002 commands, pipelined", ours: "BenchmarkPresenceHeartbeat/redschema-noindex", their: "BenchmarkPresenceHeartbeat/seed002", goal: 1.0},
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
}

// scsNoCluster is why the session rows have no peer figures on a cluster.
const scsNoCluster = "scs's goredisstore takes a *redis.Client, not a cluster client"
