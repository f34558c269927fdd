-- devices.lua: read one session for a device list, without sliding it or
-- writing anything (uses lib.lua).
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
--
-- Returns {'ok', now_ms, expiry_ms, {value, ...}} with the values of user_id,
-- email, created_at, last_activity, ip_address, user_agent,
-- device_fingerprint, absolute_expiry and idle_timeout (false when the
-- session has none) in that order when the session
-- is live (listed with a score above now, its hash present with an
-- absolute_expiry above now); {'none'} when it is not (its leftovers are
-- left to the scripts that write); {'corrupt', 1, why} when the hash's
-- absolute_expiry is not a deadline this package writes.
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
local now = now_ms()
local score = tonumber(redis.call('ZSCORE', idx, sid))
local v = redis.call('HMGET', key, 'user_id', 'email', 'created_at', 'last_activity', 'ip_address',
  'user_agent', 'device_fingerprint', 'absolute_expiry', 'idle_timeout')
local abs = v[8]
if abs then
  local n = to_int(abs)
  if not n or n > now + MAX_AHEAD_MS then
    return {'corrupt', 1, 'absolute_expiry ' .. abs .. ' is not a deadline this package writes'}
  end
  if score and score > now and n > now then
    for i = 1, 8 do
      if not v[i] then return {'corrupt', 1, 'no ' .. ({'user_id', 'email', 'created_at', 'last_activity',
        'ip_address', 'user_agent', 'device_fingerprint'})[i]} end
    end
    return {'ok', now, score, v}
  end
elseif redis.call('EXISTS', key) == 1 and score then
  return {'corrupt', 1, 'no absolute_expiry'}
end
return {'none'}
