-- disconnect: remove one connection; mark the user offline if it was the
-- last live one. Removing an unknown connection is not an error. Uses
-- lib.lua.
-- KEYS[1..4]  as lib.lua describes them (presence, connections, online
--             index shard, request memo)
-- ARGV[1..11] as lib.lua describes them (user, connection, format, TTL,
--             retention, events channel, index, layout, skew bound,
--             replay window, request ID)
-- Returns {'ok', live left, went offline 0/1, status} or {'corrupt', i, why}; a
-- replay returns the first run's reply.
local rec = replayed(KEYS[4], ARGV[11])
if rec == false then return {'corrupt', 4, REPLAY_CORRUPT} end
if rec then return rec end
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local conn = ARGV[2]
local seen = maxDead
if live[conn] then
  -- deleted by settle(), after the index (with the single-key layout
  -- settle() writes the whole value)
  if not single then conn_dels[#conn_dels + 1] = conn end
  live[conn] = nil
  n = n - 1
  seen = now
end
if seen == 0 and p then seen = p.last end
if seen == 0 then seen = now end
local status, activity = current(p)
local st, changed = settle(p, live, vals, '', n, status, activity, seen, now)
return remember(KEYS[4], ARGV[11], {'ok', n, (changed and n == 0) and 1 or 0, st}, now, ARGV[10])
