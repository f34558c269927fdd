-- motion: the server clock and the latest "on" event of a location.
-- KEYS[1] meta:motion:{location}
-- ARGV[1] retention, ms
-- Returns {'ok', now ms, lastMotionTime ms or false when there is none within
-- the retention}, {'corrupt', 1, why} when lastMotionTime is not Unix ms.
local now = now_ms()
local last = redis.call('HGET', KEYS[1], 'lastMotionTime')
if not last then return {'ok', now, false} end
local ms = to_int(last, 0)
if not ms then return {'corrupt', 1, 'lastMotionTime is not Unix ms'} end
if ms < now - tonumber(ARGV[1]) then return {'ok', now, false} end
return {'ok', now, ms}
