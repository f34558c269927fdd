-- channel_settle: a sweep's visit of one channel its slot's due shard
-- named: settle expired devices (announcing the silent leaves), publish a
-- pending occupancy event, reschedule the channel. Running it twice is
-- running it once (the second run finds nothing due). Uses lib.lua.
-- KEYS[1..4] as lib.lua describes them for channels (members, devices,
--            occupancy, due shard)
-- ARGV[1..9] as lib.lua describes them for channels (ARGV[1..5] used:
--            channel, events channel, device TTL, sweep window, occupancy
--            interval)
-- Returns {'ok', users who left} or {'corrupt', 1, why} for a member value this
-- package did not write.
preflight()
local now = now_ms()
local left, bad = settle_expired(now)
if bad then return bad end
schedule(now, occupancy(now))
return {'ok', left}
