-- rfc3339.lua: Unix milliseconds as an RFC 3339 timestamp. Sent before
-- the scripts whose operation names call.RFC3339.

-- rfc3339 formats Unix milliseconds (a whole number, at least 0) as the
-- seeds write timestamps, "2026-01-16T10:00:00Z" (UTC, whole seconds),
-- with the days-to-civil algorithm (Lua in Redis has no os.date), in
-- integer steps (a - a % b) / b rather than math.floor calls, and the
-- digits cut from a string of every two-digit number: about a third
-- fewer instructions than math.floor and string.format.
local function rfc3339(ms)
  local s = (ms - ms % 1000) / 1000
  local sub, D = string.sub, '00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899'
  local rem = s % 86400
  local z = (s - rem) / 86400 + 719468
  local doe = z % 146097
  local a = doe - (doe - doe % 1460) / 1460 + (doe - doe % 36524) / 36524 - (doe - doe % 146096) / 146096
  local yoe = (a - a % 365) / 365
  local y = yoe + (z - doe) / 146097 * 400
  local doy = doe - (365 * yoe + (yoe - yoe % 4) / 4 - (yoe - yoe % 100) / 100)
  local b = 5 * doy + 2
  local mp = (b - b % 153) / 153
  local c = 153 * mp + 2
  local d = doy - (c - c % 5) / 5 + 1
  local m = mp + 3
  if mp >= 10 then m = mp - 9 end
  if m <= 2 then y = y + 1 end
  local ss = rem % 60
  local mm = (rem - ss) / 60 % 60
  local hh = (rem - rem % 3600) / 3600
  local yy = y % 100
  local cc = (y - yy) / 100
  return sub(D, 2 * cc + 1, 2 * cc + 2) .. sub(D, 2 * yy + 1, 2 * yy + 2) .. '-' ..
    sub(D, 2 * m + 1, 2 * m + 2) .. '-' .. sub(D, 2 * d + 1, 2 * d + 2) .. 'T' ..
    sub(D, 2 * hh + 1, 2 * hh + 2) .. ':' .. sub(D, 2 * mm + 1, 2 * mm + 2) .. ':' ..
    sub(D, 2 * ss + 1, 2 * ss + 2) .. 'Z'
end
