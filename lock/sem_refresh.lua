-- sem_refresh: extend a live permit to a new lease from now.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- ARGV[2] new lease, ms
-- Returns 1 when extended, 0 when the permit expired or was released.
local t = redis.call('TIME')
local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not score) or tonumber(score) <= nowms then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', string.format('%.0f', nowms + tonumber(ARGV[2])), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', tonumber(last[2]) - nowms))
return 1
