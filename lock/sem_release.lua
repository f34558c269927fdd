-- sem_release: give a permit back.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- Returns ok() when the caller held a live permit, else conflict().
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then
  return conflict()
end
redis.call('ZREM', KEYS[1], ARGV[1])
-- A weighted holder's other permits, {owner}:2 ... (see sem_acquire.lua).
local k = 2
while redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. k) == 1 do
  k = k + 1
end
if tonumber(score) <= now_ms() then
  return conflict()
end
return ok()
