-- channel_settle: a sweep's visit of one channel its slot's due shard
-- named (after channel.lua): settle expired devices (announcing the silent
-- leaves), publish a pending occupancy event, reschedule the channel.
-- Running it twice is running it once (the second run finds nothing due).
-- KEYS[1..4] and ARGV[1..5] as channel.lua describes them
-- Returns ok(users who left).
preflight()
local now = now_ms()
local left, bad = settle_expired(now)
if bad then return bad end
schedule(now, occupancy(now))
return ok(left)
