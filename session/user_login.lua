-- user_login.lua: start a user record, unless the user is blocked (uses
-- lib.lua's replayed and remember).
--
-- KEYS[1] user record   user:{user_id}
-- KEYS[2] request key   session:request:{user_id}:{request_id}
-- ARGV[1] TTL, ms
-- ARGV[2] status: 'login' or 'anonymous'
-- ARGV[3] device_id
-- ARGV[4] ip_address ('' = omit)
-- ARGV[5] replay window, ms
--
-- Returns {'ok', login time, Unix ms}; the same request sent again within the
-- window reports its first login time and writes nothing. {'conflict'} when
-- the record is blocked (nothing written); {'corrupt', i, why} when KEYS[i]
-- holds data this package did not write.
local key = KEYS[1]
local done = replayed(2, 9007199254740991)
if done == false then return {'corrupt', 2, 'not a recorded outcome'} end
if done then return {'ok', done} end
local st = redis.call('HGET', key, 'status')
if st == 'blocked' then
  return {'conflict'}
end
if st and st ~= 'login' and st ~= 'anonymous' then
  return {'corrupt', 1, 'status is not login, anonymous or blocked'}
end
local now = now_ms()
redis.call('DEL', key)
redis.call('HSET', key, 'device_id', ARGV[3], 'login_time', int_str(now), 'last_seen', int_str(now), 'status', ARGV[2])
if ARGV[4] ~= '' then
  redis.call('HSET', key, 'ip_address', ARGV[4])
end
redis.call('PEXPIRE', key, ARGV[1])
remember(2, now, ARGV[5])
return {'ok', now}
