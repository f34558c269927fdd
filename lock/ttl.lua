-- ttl: remaining lease of the caller's lock.
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- Returns {'ok', remaining lease ms}, or {'conflict'} when the caller does not
-- hold it (table literals: see acquire.lua).
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  return {'ok', redis.call('PTTL', KEYS[1])}
end
return {'conflict'}
