-- fixed.lua: FixedWindow, one rule, for Allow and AllowN of a Limiter
-- whose Policy is that one rule, without runtime config or
-- WithAutoBlock. Every other check (Peek, AllowAtMost, several rules,
-- config) runs allow.lua, whose results this script reproduces exactly
-- (TestSingleRuleScriptsMatchGeneral).
--
-- Why a second script for the algorithm: it runs the rule's commands and
-- nothing else (no policy to decode, no loop over rules), and Redis runs
-- it for 44 % less CPU than allow.lua on the same policy: bench row
-- BenchmarkRatelimitAllow/fixed/redschema, 45.6k redis-Ir/op with this
-- script against 80.8k with allow.lua (callgrind, 3000 checks, hz 1).
--
-- KEYS[1]  block key   ratelimit:block:{id}; not passed at all
--          WithoutBlocks (the state key is then KEYS[1])
-- KEYS[#KEYS] the rule's state key (same hash tag)
-- ARGV[1]  cost        integer, 1 <= cost <= rate (checked in Go)
-- ARGV[2]  rate
-- ARGV[3]  period      in ms
-- Returns (ok and limit as one string of words: '%d' truncates as Redis's
-- table reply does, and no table is built)
--   {'ok', remaining, retry_us, reset_us}     admitted and counted; retry_us 0
--   {'limit', remaining, retry_us, reset_us}  refused, nothing consumed
--   {'conflict', block_us}                    blocked: the block's remaining time
--   {'corrupt', i, why}                       KEYS[i] holds what this script does
--                                         not write (wrong type, a number out
--                                         of the strict format or range)
-- remaining and reset_us are the rule's, as in allow.lua. The reply
-- vocabulary is spelled as table literals ({'ok', ...}) instead of the
-- prelude's {'ok'}, {'limit'}, {'conflict'} and {'corrupt'}: a prelude helper is a
-- closure made anew on every call (some 350 VM instructions each, measured
-- with callgrind), which this fast path does not pay.
--
-- The state key is the counter
-- ratelimit:api:{id}:{window} or ratelimit:ip:{ip}:{endpoint}:{window}: a
-- decimal integer, as seed 001's applications INCR it.
--
-- INCRBY first, since most requests are admitted, and DECRBY in the same
-- atomic script when that overshoots RATE: no other command can see the
-- overshoot, and a refusal leaves the count as it was. The window is the
-- counter's TTL, set when INCRBY creates the counter and restored if found
-- missing (a repair), so no TIME is needed. A counter that is negative,
-- above 2^40 or whose TTL is longer than the window was not written by a
-- limiter: the increment is undone and the key reported.
--
-- A resend of this script after its reply was lost counts the request
-- again (a counter cannot tell one request from another; see the package
-- doc, Retries): the limiter is then stricter, never looser.

local MAX_COUNT = 1099511627776 -- 2^40: no rate, burst or count is larger
local call, pcall_ = redis.call, redis.pcall
local floor, ceil, fmt = math.floor, math.ceil, string.format
local cost = tonumber(ARGV[1])
local KI = #KEYS -- the state key's index: 2, or 1 without the block key
local key = KEYS[KI]
local RATE, PMS, PMS_S = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[3]

if KI == 2 then
  -- almost always absent: one GET decides; a block key is read as
  -- allow.lua's block_ttl reads it
  local v = pcall_('GET', KEYS[1])
  if v then
    if type(v) == 'table' then return {'corrupt', 1, 'not a string (wrong type)'} end
    if #v > 32 or not string.match(v, '^[%w_%-]+$') then return {'corrupt', 1, 'not a request ID written by Block'} end
    local b = call('PTTL', KEYS[1])
    if b > 31622400000 then return {'corrupt', 1, 'TTL above 366 days'} end
    if b < 0 then b = 31622400000 end -- no TTL: the longest block (366 days)
    if b > 0 then return {'conflict', b * 1000} end
  end
end

local n = pcall_('INCRBY', key, ARGV[1])
if type(n) == 'table' then
  -- the first write: a refusal of the server (OOM past maxmemory) is
  -- its error, not the counter's; the counter's are ERR and WRONGTYPE
  local code = string.match(n.err, '^(%u+) ')
  if code ~= 'ERR' and code ~= 'WRONGTYPE' then return n end
  return {'corrupt', KI, 'not an integer counter'}
end
if n < cost or n - cost > MAX_COUNT then
  call('DECRBY', key, ARGV[1])
  return {'corrupt', KI, 'counter out of range'}
end
local ttl
if n == cost and call('PEXPIRE', key, PMS_S, 'NX') == 1 then
  -- a new window (not one refunded to empty, which keeps its end)
  ttl = PMS
else
  ttl = call('PTTL', key)
  if ttl < 0 then
    ttl = PMS
    call('PEXPIRE', key, PMS_S)
  elseif ttl > PMS then
    call('DECRBY', key, ARGV[1])
    return {'corrupt', KI, 'TTL longer than the window'}
  end
end
if n > RATE then
  call('DECRBY', key, ARGV[1])
  local rem = RATE - n + cost
  if rem < 0 then rem = 0 end
  return fmt('limit %d %d %d', rem, ttl * 1000, ttl * 1000)
end
return fmt('ok %d 0 %d', RATE - n, ttl * 1000)
