-- block.lua: Block(id, d). Blocks only lengthen: the block key is set (PX)
-- only when the new block ends later than the current one.
--
-- KEYS[1]  block key  ratelimit:block:{id}  (STRING "1" with a TTL)
-- ARGV[1]  duration   whole milliseconds, 1 <= d <= MaxBlock (checked in Go)
-- Returns 1 when the block was set, 0 when a longer one (or a block key
-- without a TTL, which counts as blocked) was kept.

local ms = tonumber(ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 or ttl >= ms then return 0 end
redis.call('SET', KEYS[1], '1', 'PX', ms)
return 1
