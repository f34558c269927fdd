-- latest: the newest readings of one sensor type in a location, newest
-- first, within the retention. Sent after the prelude and lib.lua
-- (call.Uses: zset_each, list_items, chunk_items, MAX_SCAN).
-- KEYS[1] the type's raw key (seed sorted set or list, or compact key)
-- ARGV[1] source: "zset", "list" or "compact"
-- ARGV[2] environmental field ("temperature", "illuminance"), "" otherwise
-- ARGV[3] how many (n >= 1)   ARGV[4] retention, ms
-- Returns {'ok', {ts1, payload1, ts2, payload2, ...}} with times in decimal
-- digits (miniredis prints a round score in exponent form), {'limit'} when
-- the scan passes MAX_SCAN, {'corrupt', 1, why} for a member that is not a
-- reading.
local kind, field, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
local cut = now_ms() - tonumber(ARGV[4])
local out = {}
local function put(ts, m)
  out[#out + 1] = score_digits(ts)
  out[#out + 1] = m
end
if kind == 'zset' then
  local done, why = zset_each(KEYS[1], field, int_str(cut), '+inf', n, true, false, put)
  if done == nil then return {'corrupt', 1, why} end
  if done == false then return {'limit'} end
elseif kind == 'list' then
  local its, why = list_items(KEYS[1], cut, math.huge)
  if not its then return {'corrupt', 1, why} end
  for i = #its, math.max(1, #its - n + 1), -1 do put(its[i][1], its[i][2]) end
else
  -- Chunks newest first; every reading of a chunk is older than the
  -- next chunk's start, so chunk by chunk is newest first.
  local page = 0
  while #out < 2 * n do
    local cs = redis.call('ZREVRANGE', KEYS[1], page, page + 15)
    if #cs == 0 then break end
    for i = 1, #cs do
      local its = {}
      if not chunk_items(its, cs[i], cut, math.huge) then
        return {'corrupt', 1, 'member is not a chunk: ' .. string.sub(cs[i], 1, 64)}
      end
      table.sort(its, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[4] < b[4]) end)
      for j = #its, 1, -1 do
        if #out >= 2 * n then break end
        put(its[j][1], its[j][2])
      end
    end
    page = page + 16
  end
end
return {'ok', out}
