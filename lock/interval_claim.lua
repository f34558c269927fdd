-- interval_claim: claim a cron job's run if its interval has passed
-- (issue_fence comes from fence.lua, prepended).
-- KEYS[1] last run          cron:last-run:{job_name} (Unix ms, decimal, no TTL)
-- KEYS[2] run lease         lock:cron:{job_name}
-- KEYS[3] fence key         lock:fence:cron:{job_name}
-- ARGV[1] interval, ms
-- ARGV[2] lease, ms, or "0" for no lease
-- ARGV[3] owner ID (no ':')
-- ARGV[4] fence key TTL, ms
-- Returns {1, now ms, previous run ms or -1, fence token or 0} when claimed,
-- {0, now ms, previous run ms or -1, remaining lease ms or 0} when not due
-- or still running, {-1, 0, 0, 0} when the last-run value is not a decimal
-- of at most 15 digits, {-2, 0, 0, 0} when the fence is not a decimal below
-- 2^53 - 1.
local t = redis.call('TIME')
local nowus = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowms = math.floor(nowus / 1000)
local lease = tonumber(ARGV[2])
local prev = redis.call('GET', KEYS[1])
local last = -1
if prev then
  if #prev > 15 or not string.match(prev, '^%d+$') then
    return {-1, 0, 0, 0}
  end
  last = tonumber(prev)
end
if lease > 0 then
  local pttl = redis.call('PTTL', KEYS[2])
  if pttl ~= -2 then
    return {0, nowms, last, pttl}
  end
end
if last >= 0 and nowms - last < tonumber(ARGV[1]) then
  return {0, nowms, last, 0}
end
local tok = 0
if lease > 0 then
  tok = issue_fence(KEYS[3], nowus, ARGV[4])
  if not tok then
    return {-2, 0, 0, 0}
  end
  redis.call('SET', KEYS[2], ARGV[3] .. ':' .. string.format('%.0f', nowms) .. ':' .. ARGV[2], 'PX', ARGV[2])
end
redis.call('SET', KEYS[1], string.format('%.0f', nowms))
return {1, nowms, last, tok}
