-- enqueue: add one job to a queue, unless its ID is live or inside its
-- uniqueness window.
--
-- KEYS[1] jobs hash      queue:{q}:jobs        id -> job JSON
-- KEYS[2] state hash     queue:{q}:state       id -> "dlv,retry,max,level,err"
-- KEYS[3] priority zset  queue:{q}:priority:{level}  id -> ready time
-- KEYS[4] stats hash     queue:stats:{q}
-- KEYS[5] wake list      queue:{q}:executions  at most one token
-- KEYS[6] unique string  queue:{q}:unique:{id}
-- ARGV[1] job ID
-- ARGV[2] job JSON
-- ARGV[3] max retries
-- ARGV[4] level name (high|normal|low)
-- ARGV[5] delay in ms from server time (>= 0)
-- ARGV[6] absolute process-at in Unix ms, or 0
-- ARGV[7] uniqueness window in ms, or 0
-- ARGV[8] wake list TTL in ms
-- Returns 1 when enqueued, 0 when the ID is a duplicate.
--
-- Scores are ready-time-ms * 1000 plus a sequence within the millisecond
-- (the stats hash's fifo_seq: the last score given, raised to the current
-- millisecond when time has moved on), so jobs ready at once keep FIFO
-- order across producers (up to 1000 per ms; beyond, ties go by ID).
local id = ARGV[1]
if redis.call('HSETNX', KEYS[1], id, ARGV[2]) == 0 then
  return 0
end
local uniq = tonumber(ARGV[7])
if uniq > 0 then
  if not redis.call('SET', KEYS[6], '1', 'NX', 'PX', uniq) then
    redis.call('HDEL', KEYS[1], id)
    return 0
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local at = now + tonumber(ARGV[5])
local abs = tonumber(ARGV[6])
if abs > at then
  at = abs
end
local score
if at <= now then
  local base = now * 1000
  score = redis.call('HINCRBY', KEYS[4], 'fifo_seq', 1)
  if score < base then
    score = base
    redis.call('HSET', KEYS[4], 'fifo_seq', base)
  elseif score > base + 999 then
    score = base + 999
  end
  if redis.call('LLEN', KEYS[5]) == 0 then
    redis.call('RPUSH', KEYS[5], '1')
    redis.call('PEXPIRE', KEYS[5], ARGV[8])
  end
else
  score = at * 1000
end
redis.call('HSET', KEYS[2], id, '0,0,' .. ARGV[3] .. ',' .. ARGV[4] .. ',')
redis.call('ZADD', KEYS[3], score, id)
redis.call('HINCRBY', KEYS[4], 'total_enqueued', 1)
return 1
