-- connections: a user's live connections, read-only. Uses lib.lua.
-- KEYS[1..3]  as lib.lua describes them (presence, connections, online
--             index shard)
-- ARGV[1..11] as lib.lua describes them (user, "" for the connection,
--             format, TTL, retention, events channel, index, layout, skew
--             bound, replay window, "" for the request ID)
-- Connections whose lastSeen is ARGV[4] old are left out (the next write
-- prunes them).
-- Returns {'ok', {connection ID, JSON, connection ID, JSON, ...}} or
-- {'corrupt', i, why}.

-- conn_text returns a connection's JSON text in the hash layout's form,
-- {"connectedAt","lastSeen","metadata"}.
local function conn_text(v)
  if type(v) ~= 'table' then return v end
  local md = '{}' -- an empty table would be "[]" to some encoders
  if next(v[3]) then md = unslash(cjson.encode(v[3])) end
  return '{"connectedAt":' .. int_str(v[1]) .. ',"lastSeen":' .. int_str(v[2]) .. ',"metadata":' .. md .. '}'
end

local bad, _, live, _, _, vals = load(now_ms(), false)
if bad then return bad end
local out = {}
for f in pairs(live) do
  out[#out + 1] = f
  out[#out + 1] = conn_text(vals[f])
end
return {'ok', out}
