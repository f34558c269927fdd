-- common.lua: helpers prepended to every session script (not run alone).
--
-- Every script that uses them passes all its keys in KEYS; nothing here
-- builds a key.

-- now_ms returns the server clock in Unix milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- rfc3339 formats Unix milliseconds as seed 001 writes timestamps,
-- "2026-01-16T10:00:00Z" (UTC, whole seconds), with the days-to-civil
-- algorithm (Lua in Redis has no os.date).
local function rfc3339(ms)
  local s = math.floor(ms / 1000)
  local days = math.floor(s / 86400)
  local rem = s - days * 86400
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp + 3
  if mp >= 10 then m = mp - 9 end
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02dT%02d:%02d:%02dZ', y, m, d,
    math.floor(rem / 3600), math.floor((rem % 3600) / 60), rem % 60)
end

-- ct_eq compares two strings in time that depends only on their lengths.
local function ct_eq(a, b)
  if #a ~= #b then return false end
  local diff = 0
  for i = 1, #a do
    diff = diff + math.abs(string.byte(a, i) - string.byte(b, i))
  end
  return diff == 0
end

-- expire_at sets key to expire at the deadline at (Unix ms, > now) with a
-- relative PEXPIRE of at - now, never PEXPIREAT: on Redis 7.0, PEXPIREAT
-- inside a script compares with the live clock (while lookups use the
-- script's start time), so a deadline that passes while the script runs
-- deletes the key at once, under the script's feet. The TTL may trail the
-- deadline by the script's own run time; liveness never depends on it,
-- because every script compares the index score (the exact deadline)
-- with now.
local function expire_at(key, at, now)
  local ttl = math.ceil(at - now)
  if ttl < 1 then ttl = 1 end
  redis.call('PEXPIRE', key, ttl)
end

-- fix_index drops the index entries whose session has expired (score <=
-- now) and sets the index to expire with its longest-lived session, so it
-- never outlives the user's last session. An emptied index is deleted.
local function fix_index(idx, now)
  redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
  local last = redis.call('ZRANGE', idx, -1, -1, 'WITHSCORES')
  if #last == 2 then
    expire_at(idx, tonumber(last[2]), now)
  end
end

-- live returns the absolute expiry (ms) of session sid when it is live:
-- listed in the index with a score above now and its hash present. A dead
-- session's leftovers (hash or index entry) are removed and nil returned.
-- A hash whose absolute_expiry is not a number returns false (corrupt).
local function live(key, idx, sid, now)
  local score = tonumber(redis.call('ZSCORE', idx, sid))
  local abs = redis.call('HGET', key, 'absolute_expiry')
  if score and score > now and abs then
    local n = tonumber(abs)
    if not n then return false end
    if n > now then return n end
  end
  redis.call('DEL', key)
  redis.call('ZREM', idx, sid)
  fix_index(idx, now)
  return nil
end

-- slide moves a live session's idle deadline to now + idle, capped at its
-- absolute expiry, on the hash, its TTL and its index score; it returns
-- the new deadline.
local function slide(key, idx, sid, now, idle, abs)
  local exp = now + idle
  if exp > abs then exp = abs end
  redis.call('HSET', key, 'last_activity', rfc3339(now))
  expire_at(key, exp, now)
  redis.call('ZADD', idx, exp, sid)
  fix_index(idx, now)
  return exp
end

-- user_touch records a request on a seed 000 user record: last_seen =
-- server time (Unix ms), TTL = ttl ms. It returns 'missing', 'corrupt'
-- (no valid status; nothing written), or the record's field/value list and
-- its status.
local function user_touch(key, ttl)
  local st = redis.call('HGET', key, 'status')
  if not st then
    if redis.call('EXISTS', key) == 1 then return 'corrupt' end
    return 'missing'
  end
  if st ~= 'login' and st ~= 'anonymous' and st ~= 'blocked' then
    return 'corrupt'
  end
  redis.call('HSET', key, 'last_seen', tostring(now_ms()))
  redis.call('PEXPIRE', key, ttl)
  return redis.call('HGETALL', key), st
end
