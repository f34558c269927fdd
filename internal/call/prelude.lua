-- prelude.lua: the helpers nearly every redschema script uses (server
-- time and strict integers), sent before every script (call.Declare).
-- Each "local function" costs every script a closure on every run, about
-- 430 Redis instructions (callgrind, Redis 7.0), so only helpers that
-- most scripts call belong here. The others are files of their own next
-- to this one (batched.lua, expire_at.lua, json_str.lua, rfc3339.lua,
-- score_ms.lua, to_num.lua), sent only before the scripts whose
-- operation names them (call.Helpers); calltest.CheckScripts fails an
-- operation that calls a helper it does not name, or names one it does
-- not call. Nothing here builds a key.

-- The reply vocabulary. Every script returns a table whose first element
-- is its status, followed by its payload (false for a missing value: a
-- nil would end the table): {'ok', n, 'online'}, {'corrupt', 2, 'why'}.
-- Or it returns one string: the status and the payload words separated
-- by single spaces ('ok', 'ok 2 0 online'), which the call layer splits
-- into the same reply, each word a string. A hot path whose payload is
-- integers and plain words returns the string: a table costs Redis some
-- 5k instructions more to build and walk (callgrind, Redis 7.0, an
-- EVALSHA of 5 keys and 2 arguments: 21.2k returning 'ok', 26.0k
-- returning {'ok'}). Format integers with string.format('%d'): '..'
-- formats a number with '%.14g', slower and with an exponent past 14
-- digits. The statuses:
--   'ok'        done; payload as the operation documents
--   'none'      what the call addresses does not exist (no session, no
--               ready job, no such member)
--   'conflict'  the state refuses the call (held by another owner,
--               duplicate ID, lease lost, a reused token); the first
--               payload element may be a reason word
--   'limit'     a bound is reached (capacity, connections, budget)
--   'corrupt'   {'corrupt', i, why}: KEYS[i] holds data this library did
--               not write
--   'invalid'   {'invalid', why}: an argument the script itself rejects

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
