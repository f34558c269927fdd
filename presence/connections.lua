-- connections.lua: a user's live connections. Read-only.
-- KEYS[1] connections:{user_id} connection ID -> connection JSON (hash)
-- ARGV[1] staleness bound, ms: connections whose lastSeen is this old are
--         left out (the next write prunes them)
-- Returns a flat array: connection ID, JSON, connection ID, JSON, ...
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local s = string.match(all[i + 1], '"lastSeen"%s*:%s*(%d+)')
  if not s or now - tonumber(s) < ttl then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
