-- heartbeat.lua: refresh one connection's lastSeen and the user's presence.
-- Prepended with lib.lua; KEYS[1..3] and ARGV[1..7] as described there.
-- Stale connections (this one included) are pruned first; an unknown
-- connection is not re-registered.
-- Returns {"ok", live, 0, status} | {"unknown", live, went offline (0/1), status}
--       | {"corrupt", key, field}
local now = now_ms()
local p = read_presence(KEYS[1])
if p == false then return {'corrupt', KEYS[1], ''} end
local live, n, maxDead, vals = prune(KEYS[2], now, tonumber(ARGV[4]))
if not live then return {'corrupt', KEYS[2], n} end
local conn = ARGV[2]
local status, activity = 'online', ''
if p then
  if p.status ~= 'offline' then status = p.status end
  activity = p.activity
end
if not live[conn] then
  local seen = maxDead
  if seen == 0 and p then seen = p.last end
  local st, changed = settle(p, live, vals, '', n, status, activity, seen, now)
  return {'unknown', n, changed and 1 or 0, st}
end
local v = string.gsub(vals[conn], '("lastSeen"%s*:%s*)%d+', '%1' .. num(now), 1)
redis.call('HSET', KEYS[2], conn, v)
live[conn], vals[conn] = now, v
local st, changed = settle(p, live, vals, conn, n, status, activity, now, now)
return {'ok', n, changed and 1 or 0, st}
