-- channel_heartbeat: push back the expiry of one device of a user in a
-- channel. Expired devices are settled first, so a device that stopped
-- heartbeating for the TTL is gone (its silent leave announced) and is not
-- registered again. Uses lib.lua.
-- KEYS[1..4] as lib.lua describes them for channels (members, devices,
--            occupancy, due shard)
-- ARGV[1..9] as lib.lua describes them for channels (channel, events
--            channel, device TTL, sweep window, occupancy interval, user,
--            device, "" for the request ID, replay window)
-- Returns {'ok', the user's devices} or {'none', 0} for a device not in the
-- channel, or {'corrupt', i, why}. Running it twice is running it once. It
-- also publishes a pending occupancy event whose interval has ended.
local now = now_ms()
local dev = dev_member(ARGV[6], ARGV[7])
-- channel_heartbeat_fast.lua, before it, took the case where nothing is
-- due: here something may be (or the channel's due entry is missing), so
-- settle, publish a pending occupancy event whose interval has ended, and
-- reschedule the channel, so that its next heartbeats take the head again.
-- The settle reads and checks the user's member value with the others
-- before anything is written.
preflight()
local _, bad, n = settle_expired(now, ARGV[6])
if bad then return bad end
schedule(now, occupancy(now))
local ttl = tonumber(ARGV[3])
if redis.call('ZADD', KEYS[2], 'XX', 'CH', int_str(now + ttl), dev) == 0
    and not redis.call('ZSCORE', KEYS[2], dev) then
  return {'none', 0}
end
local px = int_str(ttl + tonumber(ARGV[4]))
redis.call('PEXPIRE', KEYS[1], px)
redis.call('PEXPIRE', KEYS[2], px)
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], px) end
return {'ok', n}
