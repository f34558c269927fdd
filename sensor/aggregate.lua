-- aggregate: per-bucket count, sum, min, max, first and last of one
-- sensor type's values in a location, from raw readings or from a rollup
-- tier. Sent after the prelude and lib.lua (call.Uses: each, roll_parse,
-- fmt_num, MAX_SCAN).
-- KEYS[1] the raw key, or the tier's rollup key
-- ARGV[1] source: "zset", "list", "compact" or "rollup"
-- ARGV[2] environmental field, "" otherwise
-- ARGV[3] from, Unix ms       ARGV[4] to, Unix ms (inclusive)
-- ARGV[5] bucket width, ms (for "rollup" a multiple of the tier's)
-- ARGV[6] retention of the source, ms
-- Buckets start at multiples of the width. Returns {'ok', {start, count, sum,
-- min, max, first, last, start, ...}} by start, numbers as strings;
-- {'limit'} past MAX_SCAN; {'corrupt', 1, why}.
local kind, every = ARGV[1], tonumber(ARGV[5])
local lo = math.max(tonumber(ARGV[3]), now_ms() - tonumber(ARGV[6]))
local hi = tonumber(ARGV[4])
local bs, order = {}, {}
local function add(ts, n, s, mn, mx, f, fts, l, lts)
  local b = ts - ts % every
  local x = bs[b]
  if not x then
    bs[b] = {n, s, mn, mx, f, fts, l, lts}
    order[#order + 1] = b
    return
  end
  x[1], x[2] = x[1] + n, x[2] + s
  x[3], x[4] = math.min(x[3], mn), math.max(x[4], mx)
  if fts < x[6] then x[5], x[6] = f, fts end
  if lts >= x[8] then x[7], x[8] = l, lts end
end
if kind == 'rollup' then
  local ms = redis.call('ZRANGEBYSCORE', KEYS[1], int_str(lo - lo % 60000), int_str(hi))
  for i = 1, #ms do
    local p = roll_parse(ms[i])
    if not p then return {'corrupt', 1, 'bucket is not a rollup: ' .. string.sub(ms[i], 1, 64)} end
    if p[1] >= lo then add(p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9]) end
  end
else
  local done, why = each(kind, KEYS[1], ARGV[2], lo, hi, 0, true, function(ts, _, v)
    if v then
      ts = tonumber(ts)
      add(ts, 1, v, v, v, v, ts, v, ts)
    end
  end)
  if done == nil then return {'corrupt', 1, why} end
  if done == false then return {'limit'} end
end
table.sort(order)
local out = {}
for _, b in ipairs(order) do
  local x = bs[b]
  for _, v in ipairs({int_str(b), int_str(x[1]), fmt_num(x[2]), fmt_num(x[3]), fmt_num(x[4]), fmt_num(x[5]), fmt_num(x[7])}) do
    out[#out + 1] = v
  end
end
return {'ok', out}
