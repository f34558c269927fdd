-- extend: renew a lease while the loader runs (heartbeat).
-- KEYS[1] meta key    (HASH)
-- ARGV[1] owner ID
-- ARGV[2] lease, ms
-- Returns {'ok'} when renewed, {'conflict'} when the lease is not the
-- owner's any more. Renewing twice (a replay) renews.
local l = redis.pcall('HGET', KEYS[1], 'lease')
if type(l) ~= 'string' or string.sub(l, 1, #ARGV[1] + 1) ~= ARGV[1] .. ':' then
  return {'conflict'}
end
local lease = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lease', ARGV[1] .. ':' .. int_str(now_ms() + lease))
if redis.call('PTTL', KEYS[1]) < lease then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 'ok'
