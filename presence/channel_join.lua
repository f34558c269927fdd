-- channel_join: add one device of a user to a channel. The user becomes a
-- member with their first device. Uses lib.lua.
-- KEYS[1..5] as lib.lua describes them for channels (members, devices,
--            occupancy, due shard, request memo)
-- ARGV[1..9] as lib.lua describes them for channels (channel, events
--            channel, device TTL, sweep window, occupancy interval, user,
--            device, request ID, replay window)
-- ARGV[10] member data JSON
-- ARGV[11] max devices per user in the channel
-- Returns {'ok', joined 0/1, the user's devices, members}, {'limit', 0, devices,
-- members} when the user already has the maximum of other devices
-- (nothing written), or {'corrupt', i, why}; a replay returns the first run's
-- reply.
local rec = replayed(KEYS[5], ARGV[8])
if rec == false then return {'corrupt', 5, REPLAY_CORRUPT} end
if rec then return rec end
preflight()
local now = now_ms()
local user, dev, data = ARGV[6], dev_member(ARGV[6], ARGV[7]), ARGV[10]
-- the user's member value, read and checked with the others before the
-- settle writes, as it stands after it
local _, bad, n, had = settle_expired(now, user)
if bad then return bad end
local known = redis.call('ZSCORE', KEYS[2], dev)
if not known and n >= tonumber(ARGV[11]) then
  schedule(now, occupancy(now))
  return remember(KEYS[5], ARGV[8], {'limit', 0, n, redis.call('HLEN', KEYS[1])}, now, ARGV[9])
end
redis.call('ZADD', KEYS[2], int_str(now + tonumber(ARGV[3])), dev)
if not known then n = n + 1 end
redis.call('HSET', KEYS[1], user, n .. ':' .. data)
local joined = 0
if n == 1 and not known then
  joined = 1
  ch_event('join', user, ',"data":' .. data, now)
elseif had ~= data then
  ch_event('update', user, ',"data":' .. data, now)
end
schedule(now, occupancy(now))
return remember(KEYS[5], ARGV[8], {'ok', joined, n, redis.call('HLEN', KEYS[1])}, now, ARGV[9])
