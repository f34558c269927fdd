-- heartbeat: refresh one connection's lastSeen and the user's presence.
-- Uses lib.lua; heartbeat_fast.lua runs before it (call.Head) and falls
-- through to it, having written nothing, in every case it does not take.
-- KEYS[1..4]  as lib.lua describes them (presence, connections, online
--             index shard, request memo)
-- ARGV[1..11] as lib.lua describes them (user, connection, format, TTL,
--             retention, events channel, index, layout, skew bound,
--             replay window, request ID)
-- Stale connections (this one included) are pruned first; an unknown
-- connection is not registered again.
-- Returns {'ok', live, 0, status}, {'none', live, went offline 0/1, status} for an
-- unknown connection, or {'corrupt', i, why}.
-- Running it twice is running it once, except for the report that the
-- prune took the user offline: that reply is recorded, and a replay that
-- finds the connection unknown returns the first run's reply. A live
-- connection's heartbeat records nothing (the hot path stays one script
-- with no extra key).

-- conn_touch returns connection v with lastSeen set to t (a JSON text
-- keeps the rest of its bytes, spacing included).
local function conn_touch(v, t)
  if type(v) == 'table' then
    v[2] = t
    return v
  end
  return (string.gsub(v, LAST_SEEN, '%1' .. int_str(t), 1))
end

local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local conn = ARGV[2]
local status, activity = current(p)
if not live[conn] then
  -- the memo is read (and checked) before settle() writes, its reply
  -- returned after
  local rec = replayed(KEYS[4], ARGV[11])
  if rec == false then return {'corrupt', 4, REPLAY_CORRUPT} end
  local seen = maxDead
  if seen == 0 and p then seen = p.last end
  local st, changed = settle(p, live, vals, '', n, status, activity, seen, now)
  if rec then return rec end
  if changed then return remember(KEYS[4], ARGV[11], {'none', n, 1, st}, now, ARGV[10]) end
  return {'none', n, 0, st}
end
local v = conn_touch(vals[conn], now)
put_conn(conn, v)
live[conn], vals[conn] = now, v
local st = settle(p, live, vals, conn, n, status, activity, now, now)
return {'ok', n, 0, st}
