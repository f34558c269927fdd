-- daily: the processed and failed counts of the last n UTC days of the
-- server clock, oldest first (read-only).
--
-- KEYS[1] day prefix     queue:{q}:daily: (a day's counts are this prefix
--         and the day, yyyy-mm-dd)
-- ARGV[1] n, the days (1 to 90), today included
-- Returns {'ok', {day, processed, failed, ...}}: counts "" where a day has
-- none.
local now = now_ms()
local out = {}
for i = tonumber(ARGV[1]) - 1, 0, -1 do
  local day = day_of(now - i * 86400000)
  local v = redis.call('HMGET', KEYS[1] .. day, 'processed', 'failed')
  out[#out + 1] = day
  out[#out + 1] = v[1] or ''
  out[#out + 1] = v[2] or ''
end
return {'ok', out}
