-- sem_refresh: extend a live permit to a new lease from now.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- ARGV[2] new lease, ms
-- Returns {'ok'} when extended, {'conflict'} when the permit expired or was
-- released. The new expiry is rounded up to a whole ms (see
-- sem_acquire.lua); a replay extends again, from its own now.
local nowus = now_us()
local nowms = math.floor(nowus / 1000)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not score) or tonumber(score) <= nowms then
  return {'conflict'}
end
local at = int_str(math.ceil(nowus / 1000) + tonumber(ARGV[2]))
redis.call('ZADD', KEYS[1], 'XX', at, ARGV[1])
-- A weighted holder's other permits, {owner}:2 ... (see sem_acquire.lua).
local k = 2
while redis.call('ZSCORE', KEYS[1], ARGV[1] .. ':' .. k) do
  redis.call('ZADD', KEYS[1], 'XX', at, ARGV[1] .. ':' .. k)
  k = k + 1
end
local last = redis.call('ZRANGE', KEYS[1], '-1', '-1', 'WITHSCORES')
expire_at(KEYS[1], tonumber(last[2]), nowms)
return 'ok'
