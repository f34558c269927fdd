-- parts.lua: the metrics package's library, sent whole after the prelude
-- and before apply.lua and read.lua (call.Uses): the gauge contributions
-- of metrics:parts:{slot}:{gauge}. It defines bounded and live_parts and
-- returns nothing.
-- live_parts(r, now) takes HGETALL's reply r, fields "dimension|instance"
-- -> "value:expires_ms:written_ms", and returns: dim -> {sum of the live
-- values, latest write ms, value written then}; the dimensions in the
-- order met; the fields that are expired or not of this shape. A sum past
-- ±(2^53 - 1) is held at the bound (bounded), so that what apply.lua
-- writes from it is an integer its next run (to_int) reads back.
local function bounded(n)
  return math.max(-9007199254740991, math.min(9007199254740991, n))
end
local function live_parts(r, now)
  local out, order, dead = {}, {}, {}
  for j = 1, #r, 2 do
    local dim = string.match(r[j], '^(.*)|[^|]+$')
    local v, e, w = string.match(r[j + 1], '^(%-?%d+):(%d+):(%d+)$')
    v, e, w = to_int(v), to_int(e), to_int(w)
    if not dim or not v or not e or not w or e <= now then
      dead[#dead + 1] = r[j]
    else
      local s = out[dim]
      if not s then
        s = { 0, -1, 0 }
        out[dim] = s
        order[#order + 1] = dim
      end
      s[1] = s[1] + v
      if w > s[2] then
        s[2], s[3] = w, v
      end
    end
  end
  for _, dim in ipairs(order) do
    out[dim][1] = bounded(out[dim][1])
  end
  return out, order, dead
end
