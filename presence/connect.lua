-- connect: register (or replace) one connection of a user and mark the
-- user online. Uses lib.lua.
-- KEYS[1..4]  as lib.lua describes them (presence, connections, online
--             index shard, request memo)
-- ARGV[1..11] as lib.lua describes them (user, connection, format, TTL,
--             retention, events channel, index, layout, skew bound,
--             replay window, request ID)
-- ARGV[12] metadata JSON object ("" for none)
-- ARGV[13] status to take if the user was offline ("online", "away", ...)
-- ARGV[14] activity for the presence metadata ("" keeps the current one)
-- ARGV[15] max live connections per user
-- Returns {'ok', live, came online 0/1, status}, {'limit', live, 0, status} when the
-- user already has the maximum of other live connections (nothing
-- registered), or {'corrupt', i, why}; a replay returns the first run's reply.

-- conn_new returns a connection connected now with metadata md (JSON).
local function conn_new(now, md)
  if single then return {now, now, cjson.decode(md)} end
  return '{"connectedAt":' .. int_str(now) .. ',"lastSeen":' .. int_str(now) .. ',"metadata":' .. md .. '}'
end

local rec = replayed(KEYS[4], ARGV[11])
if rec == false then return {'corrupt', 4, REPLAY_CORRUPT} end
if rec then return rec end
local now = now_ms()
local bad, p, live, n, maxDead, vals = load(now, true)
if bad then return bad end
local conn = ARGV[2]
local was_online = p and p.status ~= 'offline'
local status = ARGV[13]
if was_online then status = p.status end
local activity = ARGV[14]
if activity == '' and was_online then activity = p.activity end
if not live[conn] and n >= tonumber(ARGV[15]) then
  local seen = maxDead
  if seen == 0 and p then seen = p.last end
  local st = settle(p, live, vals, '', n, status, p and p.activity or '', seen, now)
  return remember(KEYS[4], ARGV[11], {'limit', n, 0, st}, now, ARGV[10])
end
local md = ARGV[12]
if md == '' then md = '{}' end
local v = conn_new(now, md)
put_conn(conn, v)
vals[conn] = v
if not live[conn] then n = n + 1 end
live[conn] = now
local st, changed = settle(p, live, vals, conn, n, status, activity, now, now)
return remember(KEYS[4], ARGV[11], {'ok', n, changed and 1 or 0, st}, now, ARGV[10])
