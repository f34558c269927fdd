-- prelude.lua: the helpers every redschema script may use. Every script
-- is sent after this whole file (call.Declare), so each "local function"
-- here costs every script a closure per run: keep to helpers that several
-- packages use. Nothing here builds a key.

-- The reply vocabulary. Every script returns a table whose first element
-- is its status, followed by its payload (false for a missing value: a
-- nil would end the table), or one string: the status and the payload
-- words separated by single spaces ('ok', 'ok 2 0 online'), which the call
-- layer splits into the same reply, each word a string. A hot path whose
-- payload is integers and plain words returns the string: a table costs
-- Redis some 5k instructions more to build and walk (callgrind, Redis 7.0,
-- an EVALSHA of 5 keys and 2 arguments: 21.2k returning 'ok', 26.0k
-- returning {'ok'}). Format integers with string.format('%d'): '..' formats
-- a number with '%.14g', slower and with an exponent past 14 digits.
-- The vocabulary:
--   ok(...)            done; payload as the operation documents
--   none(...)          what the call addresses does not exist (no session,
--                      no ready job, no such member)
--   conflict(...)      the state refuses the call (held by another owner,
--                      duplicate ID, lease lost, a reused token); the first
--                      payload element may be a reason word
--   limit(...)         a bound is reached (capacity, connections, budget)
--   corrupt(i, why)    KEYS[i] holds data this library did not write
--   invalid(why)       an argument the script itself rejects
local function ok(...) return {'ok', ...} end

local function none(...) return {'none', ...} end

local function conflict(...) return {'conflict', ...} end

local function limit(...) return {'limit', ...} end

local function corrupt(i, why) return {'corrupt', i, why} end

local function invalid(why) return {'invalid', why} end

-- now_us returns the server clock in Unix microseconds (exact in a double
-- until the year 2255).
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- now_ms returns the server clock in whole Unix milliseconds, rounded
-- down.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- int_str formats an integral number as a decimal without exponent or
-- fraction (tostring gives "1e+15" for large doubles). Within 2^53 it
-- formats an integer ('%d', half the cost of '%.0f', which formats a
-- double); beyond, a double. Pass numbers to redis.call this way: Redis
-- formats a Lua number argument with '%.17g', which costs more still.
local function int_str(n)
  if n % 1 == 0 and n > -9007199254740992 and n < 9007199254740992 then return string.format('%d', n) end
  return string.format('%.0f', n)
end

-- to_int parses s as a strict decimal integer within [lo, hi] (either may
-- be nil) and of at most 2^53 - 1 in magnitude, so Lua's doubles hold it
-- exactly; anything else (a float, spaces, hex, "inf", a number too big)
-- gives nil.
local function to_int(s, lo, hi)
  if type(s) == 'number' then s = int_str(s) end
  if type(s) ~= 'string' or #s == 0 or #s > 17 or not string.match(s, '^%-?%d+$') then return nil end
  local n = tonumber(s)
  if n > 9007199254740991 or n < -9007199254740991 then return nil end
  if (lo and n < lo) or (hi and n > hi) then return nil end
  return n
end

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

-- to_num parses s as a finite decimal number (an optional sign, digits, an
-- optional fraction and exponent); anything else gives nil.
local function to_num(s)
  if type(s) == 'number' then
    if s ~= s or s == math.huge or s == -math.huge then return nil end
    return s
  end
  if type(s) ~= 'string' or #s == 0 or #s > 64 then return nil end
  if not (string.match(s, '^%-?%d+%.?%d*$') or string.match(s, '^%-?%d+%.?%d*[eE][%+%-]?%d+$')
      or string.match(s, '^%-?%.%d+$')) then
    return nil
  end
  local n = tonumber(s)
  if not n or n ~= n or n == math.huge or n == -math.huge then return nil end
  return n
end

-- json_str returns s as a JSON string literal: quotes, backslashes and
-- control bytes escaped, '/' and everything else (UTF-8 included) kept as
-- it is, as Go's encoding/json writes it with HTML escaping off.
local function json_str(s)
  return '"' .. string.gsub(s, '[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == '\\' then return '\\\\' end
    if c == '\n' then return '\\n' end
    if c == '\r' then return '\\r' end
    if c == '\t' then return '\\t' end
    return string.format('\\u%04x', string.byte(c))
  end) .. '"'
end

-- rfc3339 formats Unix milliseconds as the seeds write timestamps,
-- "2026-01-16T10:00:00Z" (UTC, whole seconds), with the days-to-civil
-- algorithm (Lua in Redis has no os.date).
local function rfc3339(ms)
  local s = math.floor(ms / 1000)
  local days = math.floor(s / 86400)
  local rem = s - days * 86400
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp + 3
  if mp >= 10 then m = mp - 9 end
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02dT%02d:%02d:%02dZ', y, m, d,
    math.floor(rem / 3600), math.floor((rem % 3600) / 60), rem % 60)
end

-- ct_eq compares two strings in time that depends only on their lengths.
local function ct_eq(a, b)
  if #a ~= #b then return false end
  local diff = 0
  for i = 1, #a do
    diff = diff + math.abs(string.byte(a, i) - string.byte(b, i))
  end
  return diff == 0
end

-- expire_at makes key expire at the deadline at (Unix ms) with a relative
-- PEXPIRE of at - now rounded up (at least 1 ms), never PEXPIREAT: on
-- Redis 7.0, PEXPIREAT inside a script compares with the live clock while
-- lookups use the script's start time, so a deadline that passes while the
-- script runs would delete the key under the script's feet.
local function expire_at(key, at, now)
  local ttl = math.ceil(at - now)
  if ttl < 1 then ttl = 1 end
  redis.call('PEXPIRE', key, int_str(ttl))
end

-- batched runs cmd on key with the elements of list (from index i to j,
-- default the whole list) as trailing arguments, in chunks of at most 1000
-- so that no call unpacks an unbounded list (Lua's stack holds about
-- 8000); extra, if given, is a list of arguments put before each chunk's
-- elements. It returns the sum of the replies when they are integers.
local function batched(cmd, key, list, i, j, extra)
  i = i or 1
  j = j or #list
  local total = 0
  while i <= j do
    local k = math.min(i + 999, j)
    local r
    if extra then
      local a = {}
      for x = 1, #extra do a[#a + 1] = extra[x] end
      for x = i, k do a[#a + 1] = list[x] end
      r = redis.call(cmd, key, unpack(a))
    else
      r = redis.call(cmd, key, unpack(list, i, k))
    end
    if type(r) == 'number' then total = total + r end
    i = k + 1
  end
  return total
end
