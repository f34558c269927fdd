-- acquire: take a free lease lock and issue its fencing token (with
-- lib.lua's issue_fence, sent before it).
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- KEYS[2] fence key         lock:fence:{resource_type}:{resource_id}
-- ARGV[1] owner ID (no ':'), new for each Acquire or TryAcquire call
-- ARGV[2] lease, ms
-- ARGV[3] fence key keep, ms (the fence TTL plus at least 1/4096 of it)
-- Returns {'ok', fence token} when acquired, {'conflict', remaining lease ms} when
-- held by someone, {'corrupt', 2, why} when the fence key is not a token
-- (another value, or a key of another type),
-- {'corrupt', 1, why} when the lock key has no TTL (nothing this package writes
-- lives forever; such a key would block the resource for good).
-- A replay of a call that already took the lease (go-redis resends a
-- command whose reply was lost) finds its own owner ID and reports the
-- token it was given: the fence key still holds it, since nobody else can
-- have acquired the resource while the caller holds it.
-- The hot path (a free resource) is TIME, SET NX and the fence's SET:
-- the lease is set first, and taken back in the same script in the rare
-- case the fence key turns out not to hold a token, so a call that
-- reports it leaves every key as it was. (Checking the fence before the
-- SET NX would cost every Acquire one more command, a GET.) issue_fence
-- reports a fence key of another type as nil too, instead of raising
-- WRONGTYPE past the take-back. It returns table
-- literals instead of the prelude's {'ok'} and {'conflict'}, whose closures
-- would be created on every run.
local t = redis.call('TIME')
local us = t[2]
if #us < 6 then
  us = string.sub('00000' .. us, -6)
end
if redis.call('SET', KEYS[1], ARGV[1] .. ':' .. t[1] .. string.sub(us, 1, 3) .. ':' .. ARGV[2], 'NX', 'PX', ARGV[2]) then
  local tok = issue_fence(KEYS[2], t, ARGV[3])
  if not tok then
    redis.call('DEL', KEYS[1])
    return {'corrupt', 2, FENCE_CORRUPT}
  end
  return string.format('ok %d', tok)
end
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  local tok = redis.call('GET', KEYS[2])
  tok = tok and #tok <= 16 and string.find(tok, '^%d+$') and tonumber(tok)
  if not tok or tok < 1 or tok > 9007199254740991 then
    return {'corrupt', 2, FENCE_CORRUPT}
  end
  return string.format('ok %d', tok)
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl < 0 then
  return {'corrupt', 1, 'lease lock without a TTL'}
end
return string.format('conflict %d', pttl)
