-- update.lua: change an online user's status and/or activity.
-- Prepended with lib.lua; KEYS[1..3] and ARGV[1..8] as described there.
-- ARGV[9] new status ("" keeps it)
-- ARGV[10] new activity ("" keeps it)
-- Returns {"ok", live, status changed (0/1), status} | {"offline", 0, 0, "offline"}
--       | {"corrupt", key, field}
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local status, activity = current(p)
local before = status
if n > 0 then
  if ARGV[9] ~= '' then status = ARGV[9] end
  if ARGV[10] ~= '' then activity = ARGV[10] end
end
local seen = maxDead
if seen == 0 and p then seen = p.last end
local st = settle(p, live, vals, '', n, status, activity, seen, now)
if n == 0 then return {'offline', 0, 0, st} end
return {'ok', n, (st ~= before) and 1 or 0, st}
