-- block.lua: Block(id, d), after blockkey.lua. Blocks only lengthen: the
-- block key is set (PX) only when the new block ends later than the
-- current one. Its value is the request ID of the Block that set it, so a
-- resend of a call whose reply was lost finds its own ID and changes
-- nothing.
--
-- KEYS[1]  block key  ratelimit:block:{id}  (STRING: request ID, with a TTL)
-- ARGV[1]  duration   whole milliseconds, 1 <= d <= MaxBlock (checked in Go)
-- ARGV[2]  request ID letters, digits, '-' and '_'; unique per call
-- ARGV[3]  channel    the events channel: a block set is announced there
-- ARGV[4]  payload    the identifier (deny caches drop it, see
--                     WithDenyCache, and learn the block on their next check)
-- Returns ok(1) when this call's block is in place (set now, or by its
-- first send), ok(0) when a block that ends later was kept (a block key
-- without a TTL counts as the longest), corrupt(1, why) when the key holds
-- what Block does not write.

local ms = tonumber(ARGV[1])
local ttl, v = block_ttl(KEYS[1])
if not ttl then return corrupt(1, v) end
if v == ARGV[2] then return ok(1) end
if ttl >= ms then return ok(0) end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ms)
redis.call('PUBLISH', ARGV[3], ARGV[4])
return ok(1)
