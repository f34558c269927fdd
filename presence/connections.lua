-- connections: a user's live connections, read-only (after index.lua and
-- lib.lua).
-- KEYS[1..3] and ARGV[1..8] as lib.lua describes them (ARGV[2] unused)
-- Connections whose lastSeen is ARGV[4] old are left out (the next write
-- prunes them).
-- Returns ok({connection ID, JSON, connection ID, JSON, ...}) or
-- corrupt(i, why).
local bad, _, live, _, _, vals = load(now_ms(), false)
if bad then return bad end
local out = {}
for f in pairs(live) do
  out[#out + 1] = f
  out[#out + 1] = conn_text(vals[f])
end
return ok(out)
