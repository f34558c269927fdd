-- disconnect.lua: remove one connection; mark the user offline if it was
-- the last live one. Removing an unknown connection is not an error.
-- Prepended with lib.lua; KEYS[1..3] and ARGV[1..8] as described there.
-- Returns {"ok", live left, went offline (0/1), status} | {"corrupt", key, field}
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
return {'ok', n, (changed and n == 0) and 1 or 0, st}
