-- acquire: take a free lease lock and issue its fencing token.
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
local last = redis.call('GET', KEYS[2])
local tok = nowus
if last then
  if #last > 16 or not string.match(last, '^%d+$') then
    return {-1, 0}
  end
  last = tonumber(last)
  if last >= 9007199254740991 then
    return {-1, 0}
  end
  if last + 1 > tok then
    tok = last + 1
  end
end
redis.call('SET', KEYS[2], string.format('%.0f', tok), 'PX', ARGV[3])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%.0f', math.floor(nowus / 1000)) .. ':' .. ARGV[2], 'PX', ARGV[2])
return {1, tok}
