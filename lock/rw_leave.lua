-- rw_leave: take a writer that gave up out of the waiting writers.
-- KEYS[1] waiting writers   lock:writers:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- ARGV[2] (optional) channel lock:released:{resource_type}:{resource_id}:
--         when the writer was waiting, readers it turned away are woken
--         (WithWakeups; see release.lua)
-- Returns {'ok', 1 when it was waiting, else 0}.
local n = redis.call('ZREM', KEYS[1], ARGV[1])
if n == 1 and ARGV[2] then
  redis.pcall('SPUBLISH', ARGV[2], '1')
end
return {'ok', n}
