-- gcra.lua: GCRA, one rule, for Allow and AllowN of a Limiter whose
-- Policy is that one rule, without runtime config or WithAutoBlock.
-- Every other check (Peek, AllowAtMost, several rules, config) runs
-- allow.lua, whose results this script reproduces exactly
-- (TestSingleRuleScriptsMatchGeneral).
--
-- Why a second script for the algorithm: it runs the rule's commands and
-- nothing else (no policy to decode, no loop over rules), and Redis runs
-- it for 26 % less CPU than allow.lua on the same policy: bench row
-- BenchmarkRatelimitAllow/gcra/redschema, 72.6k redis-Ir/op with this
-- script against 97.7k with allow.lua (callgrind, 3000 checks, hz 1).
--
-- KEYS[1]  block key   ratelimit:block:{id}; not passed at all
--          WithoutBlocks (the state key is then KEYS[1])
-- KEYS[#KEYS] the rule's state key (same hash tag)
-- ARGV[1]  cost        integer, 1 <= cost <= burst (checked in Go)
-- ARGV[2]  rate
-- ARGV[3]  period      in ms
-- ARGV[4]  burst       the capacity (the rate when the rule has none)
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
-- The state key holds the theoretical arrival time (TAT)
-- in server µs as an integer string, with a TTL of the time until the
-- bucket is full again. Written only when the request is admitted. A TAT
-- further ahead than the key's TTL allows (or one without a TTL) was not
-- written by a limiter and is reported; the TTL is read only when the TAT
-- is further ahead than this rule could put it.
--
-- A resend of this script after its reply was lost counts the request
-- again (see the package doc, Retries): stricter, never looser.

local call, pcall_ = redis.call, redis.pcall
local floor, ceil, fmt = math.floor, math.ceil, string.format
local cost = tonumber(ARGV[1])
local KI = #KEYS -- the state key's index: 2, or 1 without the block key
local key = KEYS[KI]
local RATE, CAP = tonumber(ARGV[2]), tonumber(ARGV[4])
local P = tonumber(ARGV[3]) * 1000 -- period in µs

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

local now = now_us()
local v = pcall_('GET', key)
if type(v) == 'table' then return {'corrupt', KI, 'not a string (wrong type)'} end
local T = P / RATE -- emission interval, µs
local tat = now
if v then
  -- strictly µs since the epoch as written here: digits only, at most 17
  if #v > 17 or not string.match(v, '^%d+$') then return {'corrupt', KI, 'not a time in µs'} end
  local x = tonumber(v)
  if x > now then
    if x - now > CAP * T + 1 then
      -- further ahead than this rule writes: another limiter's (a larger
      -- burst) only if the TTL covers it, as every writer sets it
      local ttl = call('PTTL', key)
      if ttl < 0 or x - now > ttl * 1000 + 1000 then return {'corrupt', KI, 'time ahead of the key\'s TTL'} end
    end
    tat = x
  end
end
local av = floor(CAP - (tat - now) / T + 1e-9)
if av < cost then
  local rt = ceil(tat - now - (CAP - cost) * T - 1e-6)
  if rt < 1 then rt = 1 end
  if av < 0 then av = 0 end
  return fmt('limit %d %d %d', av, rt, ceil(tat - now - 1e-6))
end
local nt = ceil(tat + cost * T - 1e-6)
local rs = ceil(nt - now - 1e-6)
if rs < 1 then rs = 1 end
call('SET', key, int_str(nt), 'PX', int_str(ceil(rs / 1000)))
return fmt('ok %d 0 %d', av - cost, rs)
