-- update: change an online user's status and/or activity. Uses lib.lua.
-- KEYS[1..4]  as lib.lua describes them (presence, connections, online
--             index shard, request memo)
-- ARGV[1..11] as lib.lua describes them (user, "" for the connection,
--             format, TTL, retention, events channel, index, layout, skew
--             bound, replay window, request ID)
-- ARGV[12] new status ("" keeps it)
-- ARGV[13] new activity ("" keeps it)
-- Returns {'ok', live, status changed 0/1, status}, {'none', 0, 0, "offline"} for
-- a user with no live connection, or {'corrupt', i, why}; a replay returns the
-- first run's reply.
local rec = replayed(KEYS[4], ARGV[11])
if rec == false then return {'corrupt', 4, REPLAY_CORRUPT} end
if rec then return rec end
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local status, activity = current(p)
local before = status
if n > 0 then
  if ARGV[12] ~= '' then status = ARGV[12] end
  if ARGV[13] ~= '' then activity = ARGV[13] end
end
local seen = maxDead
if seen == 0 and p then seen = p.last end
local st = settle(p, live, vals, '', n, status, activity, seen, now)
if n == 0 then return remember(KEYS[4], ARGV[11], {'none', 0, 0, st}, now, ARGV[10]) end
return remember(KEYS[4], ARGV[11], {'ok', n, (st ~= before) and 1 or 0, st}, now, ARGV[10])
