-- update: change an online user's status and/or activity (after
-- index.lua, lib.lua and replay.lua).
-- KEYS[1..4] and ARGV[1..9] as lib.lua describes them
-- ARGV[10] new status ("" keeps it)
-- ARGV[11] new activity ("" keeps it)
-- Returns ok(live, status changed 0/1, status), none(0, 0, "offline") for
-- a user with no live connection, or corrupt(i, why); a replay returns the
-- first run's reply.
local rec = replayed(KEYS[4], ARGV[9])
if rec == false then return corrupt(4, REPLAY_CORRUPT) end
if rec then return rec end
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local status, activity = current(p)
local before = status
if n > 0 then
  if ARGV[10] ~= '' then status = ARGV[10] end
  if ARGV[11] ~= '' then activity = ARGV[11] end
end
local seen = maxDead
if seen == 0 and p then seen = p.last end
local st = settle(p, live, vals, '', n, status, activity, seen, now)
if n == 0 then return remember(KEYS[4], ARGV[9], none(0, 0, st), now) end
return remember(KEYS[4], ARGV[9], ok(n, (st ~= before) and 1 or 0, st), now)
