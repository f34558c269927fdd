-- sem_ttl: remaining lease of a permit.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id}
-- ARGV[1] owner ID
-- Returns {'ok', remaining lease ms}, or {'conflict'} when the permit is not
-- live.
local nowms = now_ms()
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not score) or tonumber(score) <= nowms then
  return {'conflict'}
end
return {'ok', tonumber(score) - nowms}
