-- channel_update: replace a member's data. Uses lib.lua.
-- KEYS[1..5] as lib.lua describes them for channels (members, devices,
--            occupancy, due shard, request memo)
-- ARGV[1..9] as lib.lua describes them for channels (channel, events
--            channel, device TTL, sweep window, occupancy interval, user,
--            "" for the device, request ID, replay window)
-- ARGV[10] member data JSON
-- Returns {'ok', changed 0/1}, {'none'} for a user who is not a member, or
-- {'corrupt', i, why}; a replay returns the first run's reply.
local rec = replayed(KEYS[5], ARGV[8])
if rec == false then return {'corrupt', 5, REPLAY_CORRUPT} end
if rec then return rec end
preflight()
local now = now_ms()
local user, data = ARGV[6], ARGV[10]
-- the user's member value, read and checked with the others before the
-- settle writes, as it stands after it
local _, bad, n, had = settle_expired(now, user)
if bad then return bad end
local changed = 0
if n > 0 and had ~= data then
  redis.call('HSET', KEYS[1], user, n .. ':' .. data)
  ch_event('update', user, ',"data":' .. data, now)
  changed = 1
end
schedule(now, occupancy(now))
if n == 0 then return remember(KEYS[5], ARGV[8], {'none'}, now, ARGV[9]) end
return remember(KEYS[5], ARGV[8], {'ok', changed}, now, ARGV[9])
