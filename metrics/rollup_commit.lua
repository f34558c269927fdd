-- rollup commit: record that the sink took a tier's bucket, if the caller
-- still holds the rollup lease.
-- KEYS[1] state  metrics:rollup:{metric_name}:state
-- ARGV[1] owner
-- ARGV[2] tier name (minute, hour, day)
-- ARGV[3] bucket start, Unix ms
-- Returns {'ok'} (also for a resent commit), {'conflict'} when the lease is
-- lost, {'corrupt', 1, why}.
local now = now_ms()
local r = redis.pcall('HMGET', KEYS[1], 'lease', 'lease_exp', 'sink:' .. ARGV[2])
if type(r) == 'table' and r.err then return {'corrupt', 1, 'rollup state is not a hash'} end
local exp = to_int(r[2] or '0', 0)
if r[1] ~= ARGV[1] or not exp or exp <= now then
  return {'conflict'}
end
local wm = to_int(r[3] or '-1', -1)
if not wm then return {'corrupt', 1, 'sink watermark is not an integer'} end
if tonumber(ARGV[3]) > wm then
  redis.call('HSET', KEYS[1], 'sink:' .. ARGV[2], ARGV[3])
end
return 'ok'
