-- fair_acquire: take the lease lock in arrival order, queueing the caller
-- (with lib.lua's issue_fence, sent before it).
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- KEYS[2] fence key         lock:fence:{resource_type}:{resource_id}
-- KEYS[3] queue             lock:queue:{resource_type}:{resource_id}   (list of owner IDs)
-- KEYS[4] waiter deadlines  lock:waiters:{resource_type}:{resource_id} (zset owner ID -> ms)
-- ARGV[1] owner ID (no ':')
-- ARGV[2] lease, ms
-- ARGV[3] fence key keep, ms (see lib.lua)
-- ARGV[4] how long the caller keeps its place without asking again, ms
-- ARGV[5] "1" to join the queue when the lock is not granted, "0" not to
-- ARGV[6] the client's max TTL, ms (no waiter keeps its place longer)
-- Returns {'ok', fence token} when acquired, {'conflict', remaining lease ms or 0}
-- when not, {'corrupt', 2, why} when the fence key is not a token, {'corrupt', 1,
-- why} when the lock key has no TTL. A waiter whose deadline lies beyond
-- now + max TTL was not written by this package and is dropped. A replay of
-- a call that already took the lease reports its token (see acquire.lua).
-- A corrupt key is reported before anything is written.
local mine = redis.call('GET', KEYS[1])
if mine and string.sub(mine, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  local tok = to_int(redis.call('GET', KEYS[2]), 1)
  if not tok then
    return {'corrupt', 2, FENCE_CORRUPT}
  end
  return {'ok', tok}
end
-- Everything read is checked before the first write (pruning the
-- waiters below writes), so a call that reports a corrupt key writes
-- nothing: the lease's TTL (a missing lease has none to check: no PTTL),
-- and, when the lease is free so the caller may take it, the fence by
-- issue_fence's rule (as multi_acquire.lua does; one GET, paid for by the
-- PTTL a missing lease no longer needs). The queue and the waiters are
-- type-checked by their first reads.
local pttl = -2
if mine then
  pttl = redis.call('PTTL', KEYS[1])
  if pttl == -1 then
    return {'corrupt', 1, 'lease lock without a TTL'}
  end
else
  local last = redis.call('GET', KEYS[2])
  if last and not (#last <= 16 and string.find(last, '^%d+$') and tonumber(last) <= 9007199254740990) then
    return {'corrupt', 2, FENCE_CORRUPT}
  end
end
local t = redis.call('TIME')
local nowus = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowms = math.floor(nowus / 1000)
-- Waiters that stopped asking lose their place, and so do foreign ones.
local far = '(' .. int_str(nowms + tonumber(ARGV[6]))
for _, range in ipairs({{'-inf', nowms}, {far, '+inf'}}) do
  local dead = redis.call('ZRANGEBYSCORE', KEYS[4], range[1], range[2])
  for _, w in ipairs(dead) do
    redis.call('LREM', KEYS[3], '1', w)
  end
  if #dead > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[4], range[1], range[2])
  end
end
-- An entry without a deadline (its waiter left, or the deadline set was
-- evicted) must not block the queue: drop it when it reaches the head.
local head = redis.call('LINDEX', KEYS[3], '0')
while head and not redis.call('ZSCORE', KEYS[4], head) do
  redis.call('LPOP', KEYS[3])
  head = redis.call('LINDEX', KEYS[3], '0')
end
if pttl == -2 and ((not head) or head == ARGV[1]) then
  local tok = issue_fence(KEYS[2], t, ARGV[3]) -- checked above: never nil
  if head then
    redis.call('LPOP', KEYS[3])
  end
  redis.call('ZREM', KEYS[4], ARGV[1])
  redis.call('SET', KEYS[1], ARGV[1] .. ':' .. int_str(nowms) .. ':' .. ARGV[2], 'PX', ARGV[2])
  return {'ok', tok}
end
if ARGV[5] == '1' then
  local deadline = nowms + tonumber(ARGV[4])
  if redis.call('ZADD', KEYS[4], int_str(deadline), ARGV[1]) == 1 then
    redis.call('RPUSH', KEYS[3], ARGV[1])
  end
  local last = redis.call('ZRANGE', KEYS[4], '-1', '-1', 'WITHSCORES')
  local keep = tonumber(last[2]) - nowms
  if keep < 1 then
    keep = 1
  end
  redis.call('PEXPIRE', KEYS[3], int_str(keep))
  redis.call('PEXPIRE', KEYS[4], int_str(keep))
end
if pttl < 0 then
  pttl = 0
end
return {'conflict', pttl}
