-- refresh: extend the caller's lease lock to a new TTL from now.
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- ARGV[2] new lease, ms
-- Returns 1 when extended, 0 when the key is gone or has another owner.
local v = redis.call('GET', KEYS[1])
local p = ARGV[1] .. ':'
if not (v and string.sub(v, 1, #p) == p) then
  return 0
end
local t = redis.call('TIME')
local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], p .. string.format('%.0f', nowms) .. ':' .. ARGV[2], 'PX', ARGV[2])
return 1
