-- sem_release: give a permit back.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id}
--                           (or a read-write lock's readers, lock:readers:...)
-- ARGV[1] owner ID
-- ARGV[2] (optional) channel lock:released:{resource_type}:{resource_id},
--         which the release SPUBLISHes to wake waiters (WithWakeups; see
--         release.lua)
-- ARGV[3] (optional) '1': announce only when no live member is left (a
--         read-write lock's last reader wakes a waiting writer)
-- Returns {'ok'} when the caller held a live permit, else {'conflict'}.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then
  return {'conflict'}
end
redis.call('ZREM', KEYS[1], ARGV[1])
-- A weighted holder's other permits, {owner}:2 ... (see sem_acquire.lua).
local k = 2
while redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. k) == 1 do
  k = k + 1
end
local nowms = now_ms()
if ARGV[2] and (ARGV[3] ~= '1' or redis.call('ZCOUNT', KEYS[1], '(' .. int_str(nowms), '+inf') == 0) then
  redis.pcall('SPUBLISH', ARGV[2], '1')
end
if tonumber(score) <= nowms then
  return {'conflict'}
end
return 'ok'
