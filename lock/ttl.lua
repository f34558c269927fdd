-- ttl: remaining lease of the caller's lock.
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- Returns the remaining lease in ms, or -1 when the caller does not hold it.
local v = redis.call('GET', KEYS[1])
local p = ARGV[1] .. ':'
if v and string.sub(v, 1, #p) == p then
  return redis.call('PTTL', KEYS[1])
end
return -1
