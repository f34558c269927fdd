-- user_login.lua: start a user record (seed 000), unless the user is blocked.
--
-- KEYS[1] user record   user:{user_id}
-- ARGV[1] TTL, ms
-- ARGV[2] status: 'login' or 'anonymous'
-- ARGV[3] device_id
-- ARGV[4] ip_address ('' = omit)
--
-- Returns the server time in ms; the status 'blocked' when the record is
-- blocked (nothing written).
local key = KEYS[1]
if redis.call('HGET', key, 'status') == 'blocked' then
  return {'blocked'}
end
local now = tostring(now_ms())
redis.call('DEL', key)
redis.call('HSET', key, 'device_id', ARGV[3], 'login_time', now, 'last_seen', now, 'status', ARGV[2])
if ARGV[4] ~= '' then
  redis.call('HSET', key, 'ip_address', ARGV[4])
end
redis.call('PEXPIRE', key, ARGV[1])
return now
