-- release: delete the lease lock if the caller still owns it.
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- Returns ok() when deleted, conflict() when the key is gone or has
-- another owner (table literals: see acquire.lua).
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  redis.call('DEL', KEYS[1])
  return {'ok'}
end
return {'conflict'}
