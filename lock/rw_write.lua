-- rw_write: take the writer's lease of a read-write lock and issue its
-- fencing token (with lib.lua's issue_fence, sent before it).
-- KEYS[1] writer lease      lock:rw:{resource_type}:{resource_id}
-- KEYS[2] fence key         lock:fence:{resource_type}:{resource_id}
-- KEYS[3] readers           lock:readers:{resource_type}:{resource_id}
-- KEYS[4] waiting writers   lock:writers:{resource_type}:{resource_id}
-- ARGV[1] owner ID (no ':'), new for each Lock or TryLock call
-- ARGV[2] lease, ms
-- ARGV[3] fence key keep, ms (see lib.lua)
-- ARGV[4] place keep, ms: how long a waiting writer keeps readers out
--         without polling again; 0 for TryLock, which does not wait
-- ARGV[5] the client's max lease, ms
-- Returns {'ok', fence token} when taken, {'conflict', ms until a holder's lease
-- ends} when a writer or live readers hold the lock; a caller that waits
-- (ARGV[4] > 0) then keeps its place among the waiting writers, which
-- turns new readers away (writer preference). The writer's value is the
-- lease lock's, {owner_id}:{timestamp_ms}:{ttl_ms}; a replay of a call
-- that already took the lease reports the token it was given (see
-- acquire.lua). {'corrupt', i, why} (or WRONGTYPE) for a KEYS[i] this
-- package did not write comes before any write, so it leaves every key as
-- it was; so does a refusal, but for the waiting caller's place.
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  local tok = redis.call('GET', KEYS[2])
  tok = tok and #tok <= 16 and string.find(tok, '^%d+$') and tonumber(tok)
  if not tok or tok < 1 or tok > 9007199254740991 then
    return {'corrupt', 2, FENCE_CORRUPT}
  end
  return {'ok', tok}
end
local t = redis.call('TIME')
local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local maxat = nowms + 1 + tonumber(ARGV[5])
-- Everything read is checked before the first write, so a call that
-- fails (a corrupt key, or a refusal of TryLock) writes nothing: first
-- whether a writer or a live reader holds the lock (wait: ms until its
-- lease ends). Live readers are read, not pruned, here: the stale ones
-- are dropped once the lease is taken (and by rw_read).
local wait
if v then
  wait = redis.call('PTTL', KEYS[1])
  if wait < 0 then
    return {'corrupt', 1, 'writer lease without a TTL'}
  end
else
  local first = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. int_str(nowms), int_str(maxat), 'WITHSCORES', 'LIMIT', '0', '1')
  if first[2] then
    wait = tonumber(first[2]) - nowms
  end
end
if wait then
  -- Refused: a caller that waits keeps its place (ZADD, the first write,
  -- fails on a key of another type before writing).
  if tonumber(ARGV[4]) > 0 then
    redis.call('ZADD', KEYS[4], int_str(nowms + tonumber(ARGV[4])), ARGV[1])
    redis.call('ZREMRANGEBYSCORE', KEYS[4], '(' .. int_str(maxat), '+inf')
    local last = redis.call('ZRANGE', KEYS[4], '-1', '-1', 'WITHSCORES')
    expire_at(KEYS[4], tonumber(last[2]), nowms)
  end
  return {'conflict', wait}
end
-- Free: the ZSCORE checks the waiting writers' type, then issue_fence
-- makes the first write (nil: it wrote nothing).
local placed = redis.call('ZSCORE', KEYS[4], ARGV[1])
local tok, us = issue_fence(KEYS[2], t, ARGV[3])
if not tok then
  return {'corrupt', 2, FENCE_CORRUPT}
end
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. t[1] .. string.sub(us, 1, 3) .. ':' .. ARGV[2], 'PX', ARGV[2])
if placed then
  redis.call('ZREM', KEYS[4], ARGV[1])
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', int_str(nowms))
redis.call('ZREMRANGEBYSCORE', KEYS[3], '(' .. int_str(maxat), '+inf')
return {'ok', tok}
