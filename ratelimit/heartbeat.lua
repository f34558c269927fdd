-- heartbeat.lua: WithDegradedMode's instance registry. An instance
-- announces itself, old instances are dropped, and the live ones counted,
-- on server time, so app clocks never matter.
--
-- KEYS[1]  instances  ratelimit:instances (ZSET: instance ID scored by its
--                     last heartbeat, server ms)
-- ARGV[1]  instance ID (random per Limiter)
-- ARGV[2]  liveness    ms: an instance without a heartbeat for this long
--                      is gone; also the key's TTL
-- ARGV[3]  '1' to announce, '0' to leave (Close)
-- Returns {'ok', n}: the number of live instances, this one included when it
-- announced; {'corrupt', 1, why} when the key is not a sorted set.

local now = now_ms()
local live = tonumber(ARGV[2])
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'zset' and t ~= 'none' then return {'corrupt', 1, 'a ' .. t .. ', not a sorted set'} end
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. int_str(now - live))
local n = redis.call('ZCARD', KEYS[1])
if n > 0 then redis.call('PEXPIRE', KEYS[1], live) end
return {'ok', n}
