-- block.lua: Block(id, d). Blocks only lengthen: the
-- block key is set (PX) only when the new block ends later than the
-- current one. Its value is the request ID of the Block that set it, so a
-- resend of a call whose reply was lost finds its own ID and changes
-- nothing.
--
-- KEYS[1]  block key  ratelimit:block:{id}  (STRING: request ID, with a TTL)
-- ARGV[1]  duration   whole milliseconds, 1 <= d <= 366 days (checked in Go)
-- ARGV[2]  request ID letters, digits, '-' and '_'; unique per call
-- ARGV[3]  channel    the events channel: a block set is announced there
-- ARGV[4]  payload    the identifier (deny caches drop it, see
--                     WithDenyCache, and learn the block on their next check)
-- Returns {'ok', 1} when this call's block is in place (set now, or by its
-- first send), {'ok', 0} when a block that ends later was kept (a block key
-- without a TTL counts as the longest), {'corrupt', 1, why} when the key holds
-- what Block does not write.

local MAX_BLOCK_MS = 31622400000 -- the longest block, 366 days (maxBlock in Go)

-- The block key's reading, as allow.lua's block_ttl: absent is no block; a
-- value other than a request ID (letters, digits, '-' and '_', at most 32;
-- "1" from earlier versions), another type or a TTL above 366 days is not
-- what Block writes; no TTL counts as the longest block.
local ms = tonumber(ARGV[1])
local v = redis.pcall('GET', KEYS[1])
local ttl = 0
if v then
  if type(v) == 'table' then return {'corrupt', 1, 'not a string (wrong type)'} end
  if #v > 32 or not string.match(v, '^[%w_%-]+$') then return {'corrupt', 1, 'not a request ID written by Block'} end
  ttl = redis.call('PTTL', KEYS[1])
  if ttl > MAX_BLOCK_MS then return {'corrupt', 1, 'TTL above 366 days'} end
  if ttl < 0 then ttl = MAX_BLOCK_MS end
end
if v == ARGV[2] then return {'ok', 1} end
if ttl >= ms then return {'ok', 0} end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ms)
redis.call('PUBLISH', ARGV[3], ARGV[4])
return {'ok', 1}
