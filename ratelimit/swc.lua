-- swc.lua: SlidingCounter, one rule, for Allow and AllowN of a Limiter
-- whose Policy is that one rule, without runtime config or
-- WithAutoBlock. Every other check (Peek, AllowAtMost, several rules,
-- config) runs allow.lua, whose results this script reproduces exactly
-- (TestSingleRuleScriptsMatchGeneral).
--
-- Why a second script for the algorithm: it runs the rule's commands and
-- nothing else (no policy to decode, no loop over rules), and Redis runs
-- it for 28 % less CPU than allow.lua on the same policy: bench row
-- BenchmarkRatelimitAllow/swc/redschema, 75.0k redis-Ir/op with this
-- script against 104.8k with allow.lua (callgrind, 3000 checks, hz 1).
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
-- The state key holds "bucket:count:previous"
-- (bucket = server µs / period), with a TTL until both buckets have left
-- the window. Written only when the request is admitted. A bucket more
-- than one ahead of server time, or a count above 2^40, was not written by
-- a limiter and is reported.
--
-- A resend of this script after its reply was lost counts the request
-- again (see the package doc, Retries): stricter, never looser.

local MAX_COUNT = 1099511627776 -- 2^40: no rate, burst or count is larger
local call, pcall_ = redis.call, redis.pcall
local floor, ceil, fmt = math.floor, math.ceil, string.format
local cost = tonumber(ARGV[1])
local KI = #KEYS -- the state key's index: 2, or 1 without the block key
local key = KEYS[KI]
local RATE = tonumber(ARGV[2])
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
local idx = floor(now / P)
local cur, prev = 0, 0
if v then
  local w, c1, p1 = string.match(v, '^(%d+):(%d+):(%d+)$')
  if not w or #v > 50 then return {'corrupt', KI, 'not bucket:count:previous'} end
  w, c1, p1 = tonumber(w), tonumber(c1), tonumber(p1)
  if w > idx + 1 or c1 > MAX_COUNT or p1 > MAX_COUNT then return {'corrupt', KI, 'bucket or count out of range'} end
  if w >= idx then idx, cur, prev = w, c1, p1
  elseif w == idx - 1 then prev = c1 end
end
local start = idx * P
local frac = (now - start) / P
if frac < 0 then frac = 0 end
local av = floor(RATE - prev * (1 - frac) - cur + 1e-9)
if av < cost then
  local at
  if cur + cost <= RATE then at = start + P * (1 - (RATE - cur - cost) / prev)
  else at = start + P + P * (1 - (RATE - cost) / cur) end
  local rt = ceil(at - now - 1e-6)
  if rt < 1 then rt = 1 end
  local rs = 0
  if cur > 0 then rs = start + 2 * P - now
  elseif prev > 0 then rs = start + P - now end
  if av < 0 then av = 0 end
  return fmt('limit %d %d %d', av, rt, rs)
end
local rs = start + 2 * P - now
call('SET', key, string.format('%d:%d:%d', idx, cur + cost, prev), 'PX', int_str(ceil(rs / 1000)))
return fmt('ok %d 0 %d', av - cost, rs)
