-- user_login.lua: start a user record, unless the user is blocked (uses
-- lib.lua's replayed, remember and user_state).
--
-- KEYS[1] user record   user:{user_id}
-- KEYS[2] request key   session:request:{user_id}:{request_id}
-- ARGV[1] TTL, ms
-- ARGV[2] status: 'login' or 'anonymous'
-- ARGV[3] device_id
-- ARGV[4] ip_address ('' = omit)
-- ARGV[5] replay window, ms
-- ARGV[6] '1' to write the active flag ('true') too (WithActiveField), '0'
--
-- Returns {'ok', login time, Unix ms}; the same request sent again within the
-- window reports its first login time and writes nothing. {'conflict'} when
-- the record is blocked (status blocked, or active 'false'; nothing
-- written); {'corrupt', i, why} when KEYS[i] holds data this package does
-- not read.
local key = KEYS[1]
local done = replayed(2, 9007199254740991)
if done == false then return {'corrupt', 2, 'not a recorded outcome'} end
if done then return {'ok', done} end
local st, why = user_state(key)
if st == 'blocked' then
  return {'conflict'}
end
if st == false then return {'corrupt', 1, why} end
local now = now_ms()
redis.call('DEL', key)
redis.call('HSET', key, 'device_id', ARGV[3], 'login_time', int_str(now), 'last_seen', int_str(now), 'status', ARGV[2])
if ARGV[4] ~= '' then
  redis.call('HSET', key, 'ip_address', ARGV[4])
end
if ARGV[6] == '1' then
  redis.call('HSET', key, 'active', 'true')
end
redis.call('PEXPIRE', key, ARGV[1])
remember(2, now, ARGV[5])
return {'ok', now}
