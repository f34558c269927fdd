-- interval_claim: claim a cron job's run if its interval has passed
-- (with lib.lua's issue_fence, sent before it).
-- KEYS[1] last run          cron:last-run:{job_name} (Unix ms, decimal, no TTL)
-- KEYS[2] run lease         lock:cron:{job_name}
-- KEYS[3] fence key         lock:fence:cron:{job_name}
-- ARGV[1] interval, ms
-- ARGV[2] lease, ms, or "0" for no lease
-- ARGV[3] claim ID (an owner ID, no ':'), new for each Claim call
-- ARGV[4] fence key keep, ms (see lib.lua)
-- Returns {'ok', now ms, previous run ms or -1, fence token or 0} when
-- claimed, {'conflict', now ms, previous run ms or -1, remaining lease ms or 0}
-- when not due or still running, {'corrupt', 1, why} when the last-run value
-- is not a decimal of at most 15 digits or lies more than a day ahead of
-- the server clock, {'corrupt', 2, why} when the run lease has no TTL,
-- {'corrupt', 3, why} when the fence is not a token.
--
-- A claim writes a claim record at KEYS[2], "{claim ID}:{now}:{lease}:{previous}":
-- with a lease it is the run lease (its value begins like any lease's,
-- {owner_id}:{timestamp}:{ttl}); without one it lives for the interval
-- (at most 10 s) and blocks nothing. A replay of a claim whose reply was
-- lost finds its own record and reports the same claim.
local lease = tonumber(ARGV[2])
local rec = redis.call('GET', KEYS[2])
if rec and string.sub(rec, 1, #ARGV[3] + 1) == ARGV[3] .. ':' then
  local at, prev = string.match(rec, '^[^:]*:(%d+):%d+:(%-?%d+)$')
  if at then
    local tok = 0
    if lease > 0 then
      tok = to_int(redis.call('GET', KEYS[3]), 1)
      if not tok then
        return {'corrupt', 3, FENCE_CORRUPT}
      end
    end
    return {'ok', tonumber(at), tonumber(prev), tok}
  end
end
local t = redis.call('TIME')
local nowus = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowms = math.floor(nowus / 1000)
local prev = redis.call('GET', KEYS[1])
local last = -1
if prev then
  if #prev > 15 or not string.match(prev, '^%d+$') then
    return {'corrupt', 1, 'last run is not Unix milliseconds'}
  end
  last = tonumber(prev)
  if last > nowms + 86400000 then
    return {'corrupt', 1, 'last run is more than a day ahead of the server clock'}
  end
end
if lease > 0 then
  local pttl = redis.call('PTTL', KEYS[2])
  if pttl == -1 then
    return {'corrupt', 2, 'run lease without a TTL'}
  end
  if pttl ~= -2 then
    return {'conflict', nowms, last, pttl}
  end
end
if last >= 0 and nowms - last < tonumber(ARGV[1]) then
  return {'conflict', nowms, last, 0}
end
local tok = 0
local record = ARGV[3] .. ':' .. int_str(nowms) .. ':' .. ARGV[2] .. ':' .. int_str(last)
if lease > 0 then
  tok = issue_fence(KEYS[3], t, ARGV[4])
  if not tok then
    return {'corrupt', 3, FENCE_CORRUPT}
  end
  redis.call('SET', KEYS[2], record, 'PX', ARGV[2])
else
  redis.call('SET', KEYS[2], record, 'PX', math.min(tonumber(ARGV[1]), 10000))
end
redis.call('SET', KEYS[1], int_str(nowms))
return {'ok', nowms, last, tok}
