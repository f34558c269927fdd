-- update.lua: change an online user's status and/or activity.
-- Prepended with lib.lua; KEYS[1..3] and ARGV[1..7] as described there.
-- ARGV[8] new status ("" keeps it)
-- ARGV[9] new activity ("" keeps it)
-- Returns {"ok", live, status changed (0/1), status} | {"offline", 0, 0, "offline"}
--       | {"corrupt", key, field}
local now = now_ms()
local p = read_presence(KEYS[1])
if p == false then return {'corrupt', KEYS[1], ''} end
local live, n, maxDead, vals = prune(KEYS[2], now, tonumber(ARGV[4]))
if not live then return {'corrupt', KEYS[2], n} end
local status, activity = 'online', ''
if p then
  if p.status ~= 'offline' then status = p.status end
  activity = p.activity
end
local before = status
if n > 0 then
  if ARGV[8] ~= '' then status = ARGV[8] end
  if ARGV[9] ~= '' then activity = ARGV[9] end
end
local seen = maxDead
if seen == 0 and p then seen = p.last end
local st = settle(p, live, vals, '', n, status, activity, seen, now)
if n == 0 then return {'offline', 0, 0, st} end
return {'ok', n, (st ~= before) and 1 or 0, st}
