-- sem_acquire: take one of limit permits, each a lease of its own.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id} (zset owner ID -> expiry ms)
-- ARGV[1] owner ID
-- ARGV[2] lease, ms
-- ARGV[3] limit (>= 1)
-- Returns {1, 0} when a permit was taken, {0, ms until the first permit
-- expires} when all are held.
local t = redis.call('TIME')
local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2]) - nowms}
end
redis.call('ZADD', KEYS[1], string.format('%.0f', nowms + tonumber(ARGV[2])), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', tonumber(last[2]) - nowms))
return {1, 0}
