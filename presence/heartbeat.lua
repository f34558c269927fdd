-- heartbeat: refresh one connection's lastSeen and the user's presence
-- (after index.lua, lib.lua and replay.lua, which heartbeat_fast.lua
-- precedes: every case its fast path does not take comes here).
-- KEYS[1..4] and ARGV[1..9] as lib.lua describes them (the Tracker sends
-- four arguments and its script rebuilds ARGV from them and its compiled
-- profile, see heartbeatSource)
-- Stale connections (this one included) are pruned first; an unknown
-- connection is not registered again.
-- Returns ok(live, 0, status), none(live, went offline 0/1, status) for an
-- unknown connection, or corrupt(i, why).
-- Running it twice is running it once, except for the report that the
-- prune took the user offline: that reply is recorded, and a replay that
-- finds the connection unknown returns the first run's reply. A live
-- connection's heartbeat records nothing (the hot path stays one script
-- with no extra key).
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local conn = ARGV[2]
local status, activity = current(p)
if not live[conn] then
  local seen = maxDead
  if seen == 0 and p then seen = p.last end
  local st, changed = settle(p, live, vals, '', n, status, activity, seen, now)
  local rec = replayed(KEYS[4], ARGV[9])
  if rec == false then return corrupt(4, REPLAY_CORRUPT) end
  if rec then return rec end
  if changed then return remember(KEYS[4], ARGV[9], none(n, 1, st), now) end
  return none(n, 0, st)
end
local v = conn_touch(vals[conn], now)
put_conn(conn, v)
live[conn], vals[conn] = now, v
local st = settle(p, live, vals, conn, n, status, activity, now, now)
return ok(n, 0, st)
