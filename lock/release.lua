-- release: delete the lease lock if the caller still owns it.
-- KEYS[1] lock key          lock:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- ARGV[2] (optional) channel lock:released:{resource_type}:{resource_id},
--         which the release SPUBLISHes to wake waiters (WithWakeups); a
--         server without SPUBLISH (before 7.0) leaves the waiters to poll
-- Returns {'ok'} when deleted, {'conflict'} when the key is gone or has
-- another owner (table literals: see acquire.lua).
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  redis.call('DEL', KEYS[1])
  if ARGV[2] then
    redis.pcall('SPUBLISH', ARGV[2], '1')
  end
  return 'ok'
end
return 'conflict'
