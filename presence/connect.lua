-- connect: register (or replace) one connection of a user and mark the
-- user online (after index.lua, lib.lua and replay.lua).
-- KEYS[1..4] and ARGV[1..9] as lib.lua describes them
-- ARGV[10] metadata JSON object ("" for none)
-- ARGV[11] status to take if the user was offline ("online", "away", ...)
-- ARGV[12] activity for the presence metadata ("" keeps the current one)
-- ARGV[13] max live connections per user
-- Returns ok(live, came online 0/1, status), limit(live, 0, status) when the
-- user already has the maximum of other live connections (nothing
-- registered), or corrupt(i, why); a replay returns the first run's reply.
local rec = replayed(KEYS[4], ARGV[9])
if rec == false then return corrupt(4, REPLAY_CORRUPT) end
if rec then return rec end
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local conn = ARGV[2]
local was_online = p and p.status ~= 'offline'
local status = ARGV[11]
if was_online then status = p.status end
local activity = ARGV[12]
if activity == '' and was_online then activity = p.activity end
if not live[conn] and n >= tonumber(ARGV[13]) then
  local seen = maxDead
  if seen == 0 and p then seen = p.last end
  local st = settle(p, live, vals, '', n, status, p and p.activity or '', seen, now)
  return remember(KEYS[4], ARGV[9], limit(n, 0, st), now)
end
local md = ARGV[10]
if md == '' then md = '{}' end
local v = conn_new(now, md)
put_conn(conn, v)
vals[conn] = v
if not live[conn] then n = n + 1 end
live[conn] = now
local st, changed = settle(p, live, vals, conn, n, status, activity, now, now)
return remember(KEYS[4], ARGV[9], ok(n, changed and 1 or 0, st), now)
