-- channel_heartbeat_fast.lua: the channel heartbeat of a device that is in
-- the channel when nothing in the channel is due, the common case, in as
-- few commands as it takes. It is the channel heartbeat's head
-- (call.Head): it runs first, before the prelude and lib.lua, uses none of
-- their helpers and builds no table. Anything it does not recognise as its
-- case falls through, having written nothing, to the general heartbeat
-- (channel_heartbeat.lua), which handles it exactly as before.
--
-- KEYS[1..4] and ARGV[1..9] as channel_heartbeat.lua takes them; it reads
-- ARGV[1], ARGV[3], ARGV[4], ARGV[6] and ARGV[7].
-- Returns, in its case, 'ok'; otherwise nothing: the general heartbeat
-- runs.
--
-- The case: the channel's entry in its slot's due shard is later than now.
-- Every script that adds a device or changes the member count (join, leave,
-- channel_settle) reschedules the channel at the earliest of its first
-- device expiry and its pending occupancy event, and a heartbeat only
-- pushes expiries later: so no device of the channel has expired and no
-- occupancy event is pending whose interval has ended, and there is
-- nothing to settle or publish. Then the heartbeat is ZADD XX of the
-- device's expiry (0 changed: the device is not in the channel, or
-- heartbeated in this same millisecond; the general heartbeat tells which)
-- and the TTLs that channel_heartbeat.lua sets (PEXPIRE of a missing
-- occupancy record does nothing, as its EXISTS check does).
--
-- Why a twin: its bench row, BenchmarkPresenceCentrifuge/channel-heartbeat/
-- redschema, costs the server 189k instructions per heartbeat without this
-- head (callgrind, 2026-11-30; see "What a heartbeat and a join cost" in
-- docs/presence.md for the figure with it).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZSCORE', KEYS[4], ARGV[1])
if due and tonumber(due) > now then
  local ttl = tonumber(ARGV[3])
  if redis.call('ZADD', KEYS[2], 'XX', 'CH', string.format('%d', now + ttl), #ARGV[6] .. ':' .. ARGV[6] .. ARGV[7]) == 1 then
    local px = string.format('%d', ttl + tonumber(ARGV[4]))
    redis.call('PEXPIRE', KEYS[1], px)
    redis.call('PEXPIRE', KEYS[2], px)
    redis.call('PEXPIRE', KEYS[3], px)
    return 'ok'
  end
end
