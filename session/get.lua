-- get.lua: read a live session and slide its idle deadline (uses
-- lib.lua).
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
-- ARGV[2] idle timeout, ms (a decimal integer); the session's own
--         idle_timeout field, when it has one, takes its place
-- ARGV[3] user ID (the session's user_id must be it)
-- KEYS[3] events stream   session:events:{slot}, with events only
-- KEYS[4] sweep schedule  session:due:{slot}, with events only
-- ARGV[4..6], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events)
--
-- Returns, for a live session, {'ok', now_ms, expiry_ms, 'fields', value,
-- ...} with the values of user_id, email, created_at, last_activity,
-- ip_address, user_agent, device_fingerprint and absolute_expiry in that
-- order, then idle_timeout (false for a missing one), in the reply itself
-- (a nested table costs Redis a second conversion), when the hash holds
-- no other field but the refresh digests, else {'ok', now_ms, expiry_ms,
-- {field, value, ...},
-- 'pairs'} with the whole hash; {'none'} when the session is missing,
-- expired, evicted or revoked (its leftovers are deleted); {'corrupt', i, why}
-- when KEYS[i] holds data this package did not write, a live session's
-- hash included when the Go side would refuse it (lib.lua's session_bad:
-- checked from the fields read anyway, before the first write): nothing is
-- written then.
--
-- The hot path: liveness from one ZSCORE and the fields that the reply
-- needs anyway (lib.lua's live() is the same test), read by name with
-- HLEN to tell whether there are caller extras (half the elements of
-- HGETALL to carry into Lua and back); one ZCOUNT tells whether this
-- session is now the user's longest-lived (the index TTL is then its
-- deadline) and whether the index holds deadlines this package never
-- writes; last_activity is written only when the second it names has
-- changed; the replies are spelled as table literals. Expired index
-- entries are left to the scripts that add entries or list them (Create,
-- List and the rest prune): Get adds none.
local key, idx, sid, idle = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
events(3)
local now = clock()
local score = redis.call('ZSCORE', idx, sid)
local v = redis.call('HMGET', key, 'user_id', 'email', 'created_at', 'last_activity', 'ip_address',
  'user_agent', 'device_fingerprint', 'absolute_expiry', 'refresh_token_hash', 'refresh_token_used',
  'idle_timeout')
local abs = v[8]
local n = abs and to_int(abs)
if not (n and n <= now + MAX_AHEAD_MS and n > now and score and tonumber(score) > now) then
  -- not live, or corrupt: live() decides it as every other script does,
  -- deleting the leftovers
  local _, fail = live(key, idx, sid, now)
  return fail or {'none'}
end
local why = session_bad(ARGV[3], n, v[1], v[3], v[11])
if why then return {'corrupt', 1, why} end
if v[11] then idle = v[11] end
local exp, ttl = now + tonumber(idle), idle
if exp > n then
  exp = n
  ttl = int_str(n - now)
end
local at = int_str(exp)
local top, bad = outlived(idx, at, now)
if bad then return {'corrupt', 2, bad} end
local held = 0
for i = 1, 11 do
  if v[i] then held = held + 1 end
end
local ts = rfc3339(now)
if v[4] ~= ts then
  redis.call('HSET', key, 'last_activity', ts)
end
redis.call('PEXPIRE', key, ttl)
redis.call('ZADD', idx, at, sid)
if top then
  expire_at(idx, top + EV.grace, now)
elseif EV.key then
  expire_at(idx, exp + EV.grace, now)
else
  redis.call('PEXPIRE', idx, ttl)
end
if redis.call('HLEN', key) == held + (v[4] and 0 or 1) then
  return {'ok', now, exp, 'fields', v[1], v[2], v[3], ts, v[5], v[6], v[7], abs, v[11]}
end
return {'ok', now, exp, redis.call('HGETALL', key), 'pairs'}
