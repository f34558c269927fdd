-- connect.lua: register (or replace) one connection and mark the user online.
-- Prepended with lib.lua; KEYS[1..3] and ARGV[1..8] as described there.
-- ARGV[9] metadata JSON object (already encoded, or "")
-- ARGV[10] status to take if the user was offline ("online", "away", ...)
-- ARGV[11] activity for the presence metadata ("" keeps the current one)
-- ARGV[12] max live connections per user
-- Returns {"ok", live, came online (0/1), status} | {"toomany", live, 0, status}
--       | {"corrupt", key, field}
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local conn = ARGV[2]
local was_online = p and p.status ~= 'offline'
local status = ARGV[10]
if was_online then status = p.status end
local activity = ARGV[11]
if activity == '' and was_online then activity = p.activity end
if not live[conn] and n >= tonumber(ARGV[12]) then
  local seen = maxDead
  if seen == 0 and p then seen = p.last end
  local st = settle(p, live, vals, '', n, status, p and p.activity or '', seen, now)
  return {'toomany', n, 0, st}
end
local md = ARGV[9]
if md == '' then md = '{}' end
local v = conn_new(now, md)
put_conn(conn, v)
vals[conn] = v
if not live[conn] then n = n + 1 end
live[conn] = now
local st, changed = settle(p, live, vals, conn, n, status, activity, now, now)
return {'ok', n, changed and 1 or 0, st}
