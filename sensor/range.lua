-- range: the readings of one sensor type in a location between two
-- times, oldest first, within the retention. Sent after the prelude and
-- lib.lua (call.Uses: each, MAX_SCAN).
-- KEYS[1] the type's raw key (seed sorted set or list, or compact key)
-- ARGV[1] source: "zset", "list" or "compact"
-- ARGV[2] environmental field, "" otherwise
-- ARGV[3] from, Unix ms       ARGV[4] to, Unix ms (inclusive)
-- ARGV[5] at most this many   ARGV[6] retention, ms
-- Returns {'ok', truncated 0|1, {ts1, payload1, ts2, payload2, ...}} with
-- times in decimal digits (miniredis prints a round score in exponent
-- form), {'limit'} when the scan passes MAX_SCAN, {'corrupt', 1, why}.
local kind, field, n = ARGV[1], ARGV[2], tonumber(ARGV[5])
local lo = math.max(tonumber(ARGV[3]), now_ms() - tonumber(ARGV[6]))
local hi = tonumber(ARGV[4])
local out, count = {}, 0
local done, why = each(kind, KEYS[1], field, lo, hi, n + 1, false, function(ts, m)
  count = count + 1
  if count <= n then
    out[#out + 1] = score_digits(ts)
    out[#out + 1] = m
  end
end)
if done == nil then return {'corrupt', 1, why} end
if done == false then return {'limit'} end
local cut = 0
if count > n then cut = 1 end
return {'ok', cut, out}
