-- blockkey.lua: the ratelimit package's reading of its block key, put
-- before allow.lua, single.lua and block.lua, so the rule is written once.
--
-- block_ttl(k) returns how long the block key k still blocks, in ms: 0 when
-- k does not exist; MAX_BLOCK_MS for a block key without a TTL (Block never
-- writes one; it counts as the longest block); else its PTTL. The second
-- result is the key's value (the request ID of the Block that wrote it).
-- It returns nil and a reason, writing nothing, when k holds what Block
-- does not write: another type, a value other than a request ID (letters,
-- digits, '-' and '_', at most 32; "1" from earlier versions), or a TTL
-- above MaxBlock.
local MAX_BLOCK_MS = 31622400000

local function block_ttl(k)
  local v = redis.pcall('GET', k)
  if not v then return 0 end
  if type(v) == 'table' then return nil, 'not a string (wrong type)' end
  if #v > 32 or not string.match(v, '^[%w_%-]+$') then return nil, 'not a request ID written by Block' end
  local ttl = redis.call('PTTL', k)
  if ttl > MAX_BLOCK_MS then return nil, 'TTL above MaxBlock' end
  if ttl < 0 then return MAX_BLOCK_MS, v end
  return ttl, v
end
