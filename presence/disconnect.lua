-- disconnect.lua: remove one connection; mark the user offline if it was
-- the last live one. Removing an unknown connection is not an error.
-- Prepended with lib.lua; KEYS[1..3] and ARGV[1..7] as described there.
-- Returns {"ok", live left, went offline (0/1), status} | {"corrupt", key, field}
local now = now_ms()
local p = read_presence(KEYS[1])
if p == false then return {'corrupt', KEYS[1], ''} end
local live, n, maxDead, vals = prune(KEYS[2], now, tonumber(ARGV[4]))
if not live then return {'corrupt', KEYS[2], n} end
local conn = ARGV[2]
local seen = maxDead
if live[conn] then
  redis.call('HDEL', KEYS[2], conn)
  live[conn] = nil
  n = n - 1
  seen = now
end
if seen == 0 and p then seen = p.last end
if seen == 0 then seen = now end
local status, activity = 'online', ''
if p then
  if p.status ~= 'offline' then status = p.status end
  activity = p.activity
end
local st, changed = settle(p, live, vals, '', n, status, activity, seen, now)
return {'ok', n, (changed and n == 0) and 1 or 0, st}
