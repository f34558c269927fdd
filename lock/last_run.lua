-- last_run: read a cron job's last run as Claim judges it.
-- KEYS[1] last run          cron:last-run:{job_name} (Unix ms, decimal, no TTL)
-- ARGV: none
-- Returns {'ok', last run ms, or -1 when the job never ran}, or {'corrupt', 1, why}
-- exactly when interval_claim.lua would.
local prev = redis.call('GET', KEYS[1])
if not prev then
  return {'ok', -1}
end
if #prev > 15 or not string.match(prev, '^%d+$') then
  return {'corrupt', 1, 'last run is not Unix milliseconds'}
end
if tonumber(prev) > now_ms() + 86400000 then
  return {'corrupt', 1, 'last run is more than a day ahead of the server clock'}
end
return {'ok', tonumber(prev)}
