-- touch_location: record in the locations index that a location has a
-- reading at a time. Sent after the prelude and lib.lua (call.Uses:
-- index_touch). Every write of the location runs it, after
-- touch_location_fast.lua (call.Head), which returns at once
-- while the location's entry is less than ARGV[5] older than the
-- reading; so an entry lags its location's newest reading by less than
-- ARGV[5], and Locations lists an entry for the retention plus ARGV[5]
-- after its time: a location is listed while it has a reading within
-- the retention, and at most ARGV[5] longer.
-- KEYS[1] sensor-index:locations
-- ARGV[1] location            ARGV[2] the reading's time, Unix ms
-- ARGV[3] retention, ms       ARGV[4] max future, ms
-- ARGV[5] refresh interval, ms
-- Returns {'ok'}, {'corrupt', 1, why} when the location's score is not Unix ms.
-- A time the write script refuses (too far ahead, or older than the
-- retention) records nothing. The index is trimmed to, and the key kept
-- for, the retention plus ARGV[5] after its newest entry.
local now, ts, ret = now_ms(), tonumber(ARGV[2]), tonumber(ARGV[3])
if ts < now - ret or ts > now + tonumber(ARGV[4]) then return 'ok' end
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if cur then
  cur = score_ms(cur)
  if not cur then return {'corrupt', 1, 'location index score is not Unix ms'} end
end
local span = ret + tonumber(ARGV[5])
index_touch(KEYS[1], ARGV[1], ts, cur, now - span, span, now)
return 'ok'
