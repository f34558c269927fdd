-- channel_update: replace a member's data (after replay.lua and
-- channel.lua).
-- KEYS[1..5] and ARGV[1..8] as channel.lua describes them
-- ARGV[9] member data JSON
-- Returns ok(changed 0/1), none() for a user who is not a member, or
-- corrupt(i, why); a replay returns the first run's reply.
local rec = replayed(KEYS[5], ARGV[8])
if rec == false then return corrupt(5, REPLAY_CORRUPT) end
if rec then return rec end
preflight()
local now = now_ms()
local _, bad = settle_expired(now)
if bad then return bad end
local user, data = ARGV[6], ARGV[9]
local n, had = member_get(user)
if n == false then return corrupt(1, MEMBER_CORRUPT) end
local changed = 0
if n > 0 and had ~= data then
  redis.call('HSET', KEYS[1], user, n .. ':' .. data)
  ch_event('update', user, ',"data":' .. data, now)
  changed = 1
end
schedule(now, occupancy(now))
if n == 0 then return remember(KEYS[5], ARGV[8], none(), now) end
return remember(KEYS[5], ARGV[8], ok(changed), now)
