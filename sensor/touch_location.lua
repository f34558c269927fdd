-- touch_location: record in the locations index that a location has a
-- reading at a time (after lib.lua).
-- KEYS[1] sensor-index:locations
-- ARGV[1] location            ARGV[2] newest reading's time, Unix ms
-- ARGV[3] retention, ms     ARGV[4] max future, ms
-- Returns ok(), corrupt(1, why) when the location's score is not Unix ms.
-- A time the write script refuses (too far ahead, or older than the
-- retention) records nothing.
local now, ts, ret = now_ms(), tonumber(ARGV[2]), tonumber(ARGV[3])
if ts < now - ret or ts > now + tonumber(ARGV[4]) then return 'ok' end
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if cur then
  cur = score_ms(cur)
  if not cur then return corrupt(1, 'location index score is not Unix ms') end
end
index_touch(KEYS[1], ARGV[1], ts, cur, now - ret, ret, now)
return 'ok'
