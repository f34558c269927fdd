-- rw_read: take a reader's lease of a read-write lock.
-- KEYS[1] writer lease      lock:rw:{resource_type}:{resource_id}
-- KEYS[2] readers           lock:readers:{resource_type}:{resource_id} (zset owner ID -> expiry ms)
-- KEYS[3] waiting writers   lock:writers:{resource_type}:{resource_id} (zset owner ID -> place deadline ms)
-- ARGV[1] owner ID, new for each RLock or TryRLock call
-- ARGV[2] lease, ms
-- ARGV[3] the client's max lease, ms
-- Returns {'ok'} when taken, {'conflict', ms until the writer's lease ends, or
-- 0 when a writer waits} when a writer holds the lock or waits for it
-- (writer preference). Expiries round as sem_acquire.lua does; a replay
-- of a call that already took its lease finds it and reports ok. Members
-- beyond now + max lease were not written by this package and are
-- dropped.
local nowus = now_us()
local nowms = math.floor(nowus / 1000)
local mine = redis.call('ZSCORE', KEYS[2], ARGV[1])
if mine and tonumber(mine) > nowms then
  return 'ok'
end
local w = redis.call('PTTL', KEYS[1])
if w == -1 then
  return {'corrupt', 1, 'writer lease without a TTL'}
end
if w > 0 then
  return {'conflict', w}
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', nowms)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '(' .. int_str(math.ceil(nowus / 1000) + tonumber(ARGV[3])), '+inf')
if redis.call('ZCARD', KEYS[3]) > 0 then
  return {'conflict', 0}
end
local maxat = math.ceil(nowus / 1000) + tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', nowms)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '(' .. int_str(maxat), '+inf')
redis.call('ZADD', KEYS[2], int_str(math.ceil(nowus / 1000) + tonumber(ARGV[2])), ARGV[1])
local last = redis.call('ZRANGE', KEYS[2], '-1', '-1', 'WITHSCORES')
expire_at(KEYS[2], tonumber(last[2]), nowms)
return 'ok'
