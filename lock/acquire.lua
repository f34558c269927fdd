-- acquire: take a free lease lock and issue its fencing token (issue_fence
-- comes from fence.lua, prepended).
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- KEYS[2] fence key         lock:fence:{resource_type}:{resource_id}
-- ARGV[1] owner ID (no ':')
-- ARGV[2] lease, ms
-- ARGV[3] fence key TTL, ms
-- Returns {1, fence token} when acquired, {0, remaining lease ms} when held
-- by someone, {-1, 0} when the fence key holds anything but a decimal below 2^53 - 1
-- (above it, last + 1 is not exact in Lua's doubles).
local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then
  return {0, pttl}
end
local t = redis.call('TIME')
local nowus = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tok = issue_fence(KEYS[2], nowus, ARGV[3])
if not tok then
  return {-1, 0}
end
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%.0f', math.floor(nowus / 1000)) .. ':' .. ARGV[2], 'PX', ARGV[2])
return {1, tok}
