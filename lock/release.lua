-- release: delete the lease lock if the caller still owns it.
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- Returns 1 when deleted, 0 when the key is gone or has another owner.
local v = redis.call('GET', KEYS[1])
local p = ARGV[1] .. ':'
if v and string.sub(v, 1, #p) == p then
  return redis.call('DEL', KEYS[1])
end
return 0
