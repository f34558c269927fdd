-- refresh: extend the caller's lease lock to a new TTL from now.
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- ARGV[2] new lease, ms
-- Returns {'ok'} when extended, {'conflict'} when the key is gone or has
-- another owner (table literals: see acquire.lua). The value's timestamp
-- is the server's Unix ms, TIME's seconds and its first three digits of
-- microseconds.
local v = redis.call('GET', KEYS[1])
local p = ARGV[1] .. ':'
if not (v and string.sub(v, 1, #p) == p) then
  return {'conflict'}
end
local t = redis.call('TIME')
redis.call('SET', KEYS[1], p .. t[1] .. string.sub('00000' .. t[2], -6, -4) .. ':' .. ARGV[2], 'PX', ARGV[2])
return 'ok'
