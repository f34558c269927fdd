-- fair_acquire: take the lease lock in arrival order, queueing the caller
-- (issue_fence comes from fence.lua, prepended).
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- KEYS[2] fence key         lock:fence:{resource_type}:{resource_id}
-- KEYS[3] queue             lock:queue:{resource_type}:{resource_id}   (list of owner IDs)
-- KEYS[4] waiter deadlines  lock:waiters:{resource_type}:{resource_id} (zset owner ID -> ms)
-- ARGV[1] owner ID (no ':')
-- ARGV[2] lease, ms
-- ARGV[3] fence key TTL, ms
-- ARGV[4] how long the caller keeps its place without asking again, ms
-- ARGV[5] "1" to join the queue when the lock is not granted, "0" not to
-- Returns {1, fence token} when acquired, {0, remaining lease ms or 0} when
-- not, {-1, 0} when the fence key holds anything but a decimal below 2^53 - 1
-- (above it, last + 1 is not exact in Lua's doubles).
local t = redis.call('TIME')
local nowus = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowms = math.floor(nowus / 1000)
-- Waiters that stopped asking lose their place.
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', nowms)
for _, w in ipairs(dead) do
  redis.call('LREM', KEYS[3], 1, w)
end
if #dead > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', nowms)
end
-- An entry without a deadline (its waiter left, or the deadline set was
-- evicted) must not block the queue: drop it when it reaches the head.
local head = redis.call('LINDEX', KEYS[3], 0)
while head and not redis.call('ZSCORE', KEYS[4], head) do
  redis.call('LPOP', KEYS[3])
  head = redis.call('LINDEX', KEYS[3], 0)
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl == -2 and ((not head) or head == ARGV[1]) then
  local tok = issue_fence(KEYS[2], nowus, ARGV[3])
  if not tok then
    return {-1, 0}
  end
  if head then
    redis.call('LPOP', KEYS[3])
  end
  redis.call('ZREM', KEYS[4], ARGV[1])
  redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%.0f', nowms) .. ':' .. ARGV[2], 'PX', ARGV[2])
  return {1, tok}
end
if ARGV[5] == '1' then
  local deadline = nowms + tonumber(ARGV[4])
  if redis.call('ZADD', KEYS[4], string.format('%.0f', deadline), ARGV[1]) == 1 then
    redis.call('RPUSH', KEYS[3], ARGV[1])
  end
  local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  local keep = tonumber(last[2]) - nowms
  if keep < 1 then
    keep = 1
  end
  redis.call('PEXPIRE', KEYS[3], string.format('%.0f', keep))
  redis.call('PEXPIRE', KEYS[4], string.format('%.0f', keep))
end
if pttl < 0 then
  pttl = 0
end
return {0, pttl}
