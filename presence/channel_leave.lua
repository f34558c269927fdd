-- channel_leave: remove one device of a user from a channel. The user's
-- last device ends the membership. Removing a device that is not in the
-- channel is not an error. Uses lib.lua.
-- KEYS[1..5] as lib.lua describes them for channels (members, devices,
--            occupancy, due shard, request memo)
-- ARGV[1..9] as lib.lua describes them for channels (channel, events
--            channel, device TTL, sweep window, occupancy interval, user,
--            device, request ID, replay window)
-- Returns {'ok', left 0/1, the user's devices left, members} or {'corrupt', i,
-- why}; a replay returns the first run's reply.
local rec = replayed(KEYS[5], ARGV[8])
if rec == false then return {'corrupt', 5, REPLAY_CORRUPT} end
if rec then return rec end
preflight()
local now = now_ms()
local user = ARGV[6]
-- the user's member value, read and checked with the others before the
-- settle writes, as it stands after it
local _, bad, n, data = settle_expired(now, user)
if bad then return bad end
local left = 0
local dev = dev_member(user, ARGV[7])
if redis.call('ZSCORE', KEYS[2], dev) then
  n, left = device_gone(user, n, data, 'leave', now)
  redis.call('ZREM', KEYS[2], dev)
end
schedule(now, occupancy(now))
return remember(KEYS[5], ARGV[8], {'ok', left, n, redis.call('HLEN', KEYS[1])}, now, ARGV[9])
