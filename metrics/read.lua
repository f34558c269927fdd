-- read (after parts.lua): the value of every series of a gauge from the live contributions
-- (those written by apply's 'p' operation); read-only: dead or foreign
-- fields are skipped here and dropped by the next flush.
-- KEYS[1] parts  metrics:parts:{slot}:{gauge}
-- ARGV[1] mode: sum (add the contributions) or last (the latest written)
-- Returns ok({dimension, value, ...}), or corrupt(1, why) when KEYS[1] is
-- not a hash.
local r = redis.pcall('HGETALL', KEYS[1])
if type(r) == 'table' and r.err then
  return corrupt(1, 'gauge parts are not a hash')
end
local now = now_ms()
local out, order = live_parts(r, now)
local flat = {}
for _, dim in ipairs(order) do
  local v = out[dim][1]
  if ARGV[1] == 'last' then v = out[dim][3] end
  flat[#flat + 1] = dim
  flat[#flat + 1] = int_str(v)
end
return ok(flat)
