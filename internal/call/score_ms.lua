-- score_ms.lua: sorted-set scores read back as integers. Sent before the
-- scripts whose operation names call.ScoreMS.

-- score_ms parses a sorted-set score as Redis printed it (ZSCORE, ZRANGE
-- ... WITHSCORES, ZPOPMIN) as an integer (Unix ms, a deadline, a stamp)
-- within [lo, hi], by default [0, 2^53 - 1]; anything else (a fraction,
-- inf, nan, out of range) gives nil. Real Redis prints an integral score
-- in full, but miniredis prints a round one in exponent form
-- ("1.7955e+12" for 1795500000000), which to_int refuses: use to_int for
-- what a user or Go wrote, score_ms for a score read back.
local function score_ms(s, lo, hi)
  local n = tonumber(s)
  if not n or n ~= math.floor(n) or n < (lo or 0) or n > (hi or 9007199254740991) then return nil end
  return n
end

-- score_digits returns a score Redis printed in decimal digits, as real
-- Redis prints an integral one, when score_ms takes it, for a reply that
-- Go parses as an integer; any other score as it is (Go reports it).
local function score_digits(s)
  local n = score_ms(s)
  if n then return int_str(n) end
  return s
end
