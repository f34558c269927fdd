-- sem_ttl: remaining lease of a permit.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- Returns the remaining lease in ms, or -1 when the permit is not live.
local t = redis.call('TIME')
local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not score) or tonumber(score) <= nowms then
  return -1
end
return tonumber(score) - nowms
