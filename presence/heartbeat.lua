-- heartbeat.lua: refresh one connection's lastSeen and the user's presence.
-- Prepended with lib.lua; KEYS[1..3] and ARGV[1..8] as described there.
-- Stale connections (this one included) are pruned first; an unknown
-- connection is not re-registered.
-- Returns {"ok", live, 0, status} | {"unknown", live, went offline (0/1), status}
--       | {"corrupt", key, field}
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local conn = ARGV[2]
local status, activity = current(p)
if not live[conn] then
  local seen = maxDead
  if seen == 0 and p then seen = p.last end
  local st, changed = settle(p, live, vals, '', n, status, activity, seen, now)
  return {'unknown', n, changed and 1 or 0, st}
end
local v = conn_touch(vals[conn], now)
put_conn(conn, v)
live[conn], vals[conn] = now, v
local st, changed = settle(p, live, vals, conn, n, status, activity, now, now)
return {'ok', n, changed and 1 or 0, st}
