-- disconnect: remove one connection; mark the user offline if it was the
-- last live one (after index.lua, lib.lua and replay.lua). Removing an
-- unknown connection is not an error.
-- KEYS[1..4] and ARGV[1..9] as lib.lua describes them
-- Returns ok(live left, went offline 0/1, status) or corrupt(i, why); a
-- replay returns the first run's reply.
local rec = replayed(KEYS[4], ARGV[9])
if rec == false then return corrupt(4, REPLAY_CORRUPT) end
if rec then return rec end
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local conn = ARGV[2]
local seen = maxDead
if live[conn] then
  del_conn(conn)
  live[conn] = nil
  n = n - 1
  seen = now
end
if seen == 0 and p then seen = p.last end
if seen == 0 then seen = now end
local status, activity = current(p)
local st, changed = settle(p, live, vals, '', n, status, activity, seen, now)
return remember(KEYS[4], ARGV[9], ok(n, (changed and n == 0) and 1 or 0, st), now)
