-- read: the value of every series of a gauge; read-only:
-- dead or foreign parts are skipped here and dropped by the next flush.
-- KEYS[1] parts   metrics:parts:{slot}:{gauge}
-- KEYS[2] totals  metrics:totals:{gauge} (mode last only)
-- ARGV[1] mode: sum (add the live contributions, written by apply's 'p'
--         operation) or last (the latest Set: the fields "value:stamp" of
--         KEYS[2], written by apply's 'l' operation, and the live
--         contributions that versions before it wrote, the latest stamp
--         winning)
-- Returns {'ok', {dimension, value, ...}}, or {'corrupt', i, why} when KEYS[i] is
-- not a hash or a field of KEYS[2] is not value:stamp.
-- Sent after the prelude and parts.lua, the package library (call.Uses:
-- live_parts).
local r = redis.pcall('HGETALL', KEYS[1])
if type(r) == 'table' and r.err then
  return {'corrupt', 1, 'gauge parts are not a hash'}
end
local now = now_ms()
local out, order = live_parts(r, now)
if ARGV[1] == 'last' then
  local t = redis.pcall('HGETALL', KEYS[2])
  if type(t) == 'table' and t.err then
    return {'corrupt', 2, 'gauge totals are not a hash'}
  end
  for j = 1, #t, 2 do
    local v, st = string.match(t[j + 1], '^(%-?%d+):(%d+)$')
    v, st = to_int(v), to_int(st)
    if not v or not st then
      return {'corrupt', 2, 'field ' .. string.format('%q', string.sub(t[j], 1, 64)) .. ' is not value:stamp'}
    end
    local s = out[t[j]]
    if not s then
      out[t[j]] = { v, st, v }
      order[#order + 1] = t[j]
    elseif st >= s[2] then
      s[2], s[3] = st, v
    end
  end
end
local flat = {}
for _, dim in ipairs(order) do
  local v = out[dim][1]
  if ARGV[1] == 'last' then v = out[dim][3] end
  flat[#flat + 1] = dim
  flat[#flat + 1] = int_str(v)
end
return {'ok', flat}
