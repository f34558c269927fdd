-- lease: take an entry's lease to load it, unless it is there (or another
-- process holds the lease).
-- KEYS[1] value key   (STRING)
-- KEYS[2] meta key    (HASH; field lease = "{owner}:{deadline_ms}", server
--                      time)
-- ARGV[1] owner ID, new for each load
-- ARGV[2] lease, ms
-- ARGV[3] '1' to ignore a present value (a forced reload), else '0'
-- ARGV[4] '1' when the caller will wait for another holder's value
-- ARGV[5] longest freshness a stored entry can have, ms
-- Returns {'ok', state, ...} with state:
--   'hit'   {'ok', 'hit', value, fresh_ms}: the value is there
--   'neg'   {'ok', 'neg', false, fresh_ms}: a cached "not found"
--   'pass'  {'ok', 'pass', false, fresh_ms}: a recent load declined to store
--   'lease' {'ok', 'lease'}: the caller holds the lease now
--   'held'  {'ok', 'held', remaining_ms}: another owner holds it; with
--           ARGV[4] = '1' the waiter is counted (field waiters), so the
--           holder's write-back publishes a wake-up
-- or {'corrupt', 2, why} when the caller would be counted but the field
-- waiters is not a count (the holder's write-back or release replaces it,
-- a takeover ignores it); nothing is written then.
-- A replay (go-redis resends a command whose reply was lost) finds its
-- own owner and reports 'lease' again. Freshness comes from the TTLs, as
-- a hit reads it: a value's PTTL less the grace in its metadata's hint, a
-- marker's metadata PTTL (metadata of an older version, without a hint,
-- by its fresh_until_ms; a value without metadata, by its PTTL). Data
-- this package did not write is repaired here: a meta key of another
-- type is deleted, a value of another type too (read reported it), a
-- lease field that does not parse or lies beyond the longest lease is
-- taken over. Every field is read and parsed before the first write, and
-- the value is deleted only once nothing can fail, so a failing call
-- writes nothing. The server's clock is read only where a decision needs
-- it (a lease, an older version's fresh_until_ms), never for a hit.
local maxf = tonumber(ARGV[5])
local m = redis.pcall('HMGET', KEYS[2], 'hint', 'lease', 'fresh_until_ms', 'state', 'waiters')
if m.err then
  redis.call('DEL', KEYS[2])
  m = {false, false, false, false, false}
end
-- A value of another type is deleted only once nothing can fail any more.
local foreign = false
if ARGV[3] == '0' then
  local v = redis.pcall('GET', KEYS[1])
  if type(v) == 'table' then
    foreign = true
    v = false
  end
  local h = m[1]
  local fresh
  if v then
    local g = h and tonumber(string.match(h, '^(%d+):%d+$'))
    if g then
      fresh = redis.call('PTTL', KEYS[1]) - g
    elseif not h and not m[3] then
      local pttl = redis.call('PTTL', KEYS[1])
      if pttl > 0 then
        return {'ok', 'hit', v, pttl}
      end
    elseif not h then
      local now = now_ms()
      fresh = (to_int(m[3], 0) or now) - now
    end
    if fresh and fresh > 0 and fresh <= maxf then
      return {'ok', 'hit', v, fresh}
    end
  else
    local kind = h or m[4]
    if kind == 'neg' or kind == 'pass' then
      if h then
        fresh = redis.call('PTTL', KEYS[2])
      else
        local now = now_ms()
        fresh = (to_int(m[3], 0) or now) - now
      end
      if fresh > 0 and fresh <= maxf then
        if foreign then
          redis.call('DEL', KEYS[1])
        end
        return {'ok', kind, false, fresh}
      end
    end
  end
end
local now = now_ms()
local lease = tonumber(ARGV[2])
local o, dl
if m[2] then
  o, dl = string.match(m[2], '^(.+):(%d+)$')
  dl = to_int(dl)
end
if o and o ~= ARGV[1] and dl and dl > now and dl - now <= 300000 then
  if ARGV[4] == '1' and m[5] then
    local w = to_int(m[5], 0)
    if not w or int_str(w) ~= m[5] then
      return {'corrupt', 2, 'waiters is not a count'}
    end
  end
  if foreign then
    redis.call('DEL', KEYS[1])
  end
  if ARGV[4] == '1' then
    redis.call('HINCRBY', KEYS[2], 'waiters', '1')
  end
  return {'ok', 'held', dl - now}
end
if foreign then
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[2], 'lease', ARGV[1] .. ':' .. int_str(now + lease))
if o == ARGV[1] then
  return {'ok', 'lease'}
end
-- Metadata with none of the fields read but waiters is new, or holds
-- nothing a load keeps (the write replaces it, a release deletes it): it
-- lives for the lease. Otherwise it keeps a longer TTL (a value's, a
-- marker's).
if m[1] or m[2] or m[3] or m[4] then
  if redis.call('PTTL', KEYS[2]) < lease then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
else
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return {'ok', 'lease'}
