-- sliding.lua: Sliding (log), one rule, for Allow and AllowN of a
-- Limiter whose Policy is that one rule, without runtime config or
-- WithAutoBlock. Every other check (Peek, AllowAtMost, several rules,
-- config) runs allow.lua, whose results this script reproduces exactly
-- (TestSingleRuleScriptsMatchGeneral).
--
-- Why a second script for the algorithm: it runs the rule's commands and
-- nothing else (no policy to decode, no loop over rules), and Redis runs
-- it for about a third less CPU than allow.lua on the same policy: bench
-- row BenchmarkRatelimitAllow/sliding/redschema, 83.4k redis-Ir/op with
-- this script against 128.3k with allow.lua (callgrind, 3000 checks, hz
-- 1), measured when the script trimmed first and counted with ZCARD.
-- Counting with ZCOUNT, so that nothing is trimmed before every check is
-- done, costs an admitted check some 4k more (callgrind, 3000 admitted
-- checks on a log of 20 000 entries: 83.6k before, 87.7k after).
--
-- KEYS[1]  block key   ratelimit:block:{id}; not passed at all
--          WithoutBlocks (the state key is then KEYS[1])
-- KEYS[#KEYS] the rule's state key (same hash tag)
-- ARGV[1]  cost        integer, 1 <= cost <= rate (checked in Go)
-- ARGV[2]  nonce       unique per call, the same on a resend
-- ARGV[3]  rate
-- ARGV[4]  period      in ms
-- ARGV[5]  period + 1  in ms (the log's TTL after a request)
-- ARGV[6]  shared      '1' when the log's key has no window segment (limiters
--                      of other windows may share it), else '0'
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
-- The state key is the sorted set of
-- admitted requests, scored like the seeds' logs: Unix milliseconds,
-- integers (which a small log's listpack stores and compares as integers).
-- Members are "<nonce>-<i>" (the nonce is unique per call), so requests in
-- the same millisecond stay distinct, and a request is recognised by its
-- members.
--
-- Server time is read in µs. A request is logged at the millisecond that
-- ends after it (rounded up), and an entry scored s counts while
-- s ms + period is still ahead: rounding only ever keeps a request in the
-- window a little longer, never shorter, so the log never over-admits.
-- The window's entries are counted first (ZCOUNT above the cut, which is
-- also the type check). When the request fits, it is logged (ZADD NX)
-- and only then are the entries that left the window trimmed, so a call
-- that ends corrupt or refused has written nothing. If the request's
-- first member is already there, this is a resend of a call that was
-- admitted (go-redis resends a command whose reply was lost, and a whole
-- pipeline when its connection broke): it is reported admitted again and
-- counts nothing more. A refusal only reads: it checks for a resend
-- (ZSCORE), then finds when the request would fit. An admitted request's
-- TTL is renewed to one period after its score.
--
-- Commands per call besides TIME (and the block key's GET): admitted
-- ZCOUNT, ZADD (cost > 1: ZSCORE first), ZREMRANGEBYSCORE, PEXPIRE (a
-- shared key: PTTL first); refused ZCOUNT, ZSCORE, ZCARD, two ZRANGE; a
-- resend ZCOUNT, ZADD or ZSCORE, ZRANGE.

local call, pcall_ = redis.call, redis.pcall
local floor, ceil, fmt = math.floor, math.ceil, string.format
local cost = tonumber(ARGV[1])
local KI = #KEYS -- the state key's index: 2, or 1 without the block key
local key = KEYS[KI]
local RATE, PMS, PMS1_S = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local P = PMS * 1000 -- period in µs
local SHARED_KEY = ARGV[6] == '1'

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
-- entries scored at or before cut (ms) have left the window; ZCOUNT counts
-- those after it (and is the type check), so nothing is trimmed before
-- the request is known to be admitted
local cut = int_str(floor((now - P) / 1000))
local used = pcall_('ZCOUNT', key, '(' .. cut, '+inf')
if type(used) == 'table' then return {'corrupt', KI, 'not a sorted set (wrong type)'} end
local ms = ceil(now / 1000)
local base = ARGV[2] .. '-'
local full = used + cost > RATE
if not full then
  -- room for the request: log it, unless its first member is there
  local score = int_str(ms)
  local added
  if cost == 1 then
    added = call('ZADD', key, 'NX', score, base .. '1')
  elseif call('ZSCORE', key, base .. '1') then
    added = 0
  else
    local zs = {}
    for m = 1, cost do
      zs[2 * m - 1] = score
      zs[2 * m] = base .. m
    end
    added = batched('ZADD', key, zs)
  end
  if added > 0 then
    -- admitted, with every check done: trim what left the window. The
    -- TTL is one period from the rounded-up score: PMS + 1 ms from now. A
    -- key without a window segment may be shared with a limiter of a
    -- longer window: never shorten the TTL it set. A key naming its
    -- window is only ever given that window as its TTL.
    call('ZREMRANGEBYSCORE', key, '-inf', cut)
    if not SHARED_KEY or call('PTTL', key) < PMS + 1 then call('PEXPIRE', key, PMS1_S) end
    return fmt('ok %d 0 %d', RATE - used - cost, ms * 1000 + P - now)
  end
end

-- the rare paths, a resend or a refusal: they only read (a log scored in
-- the future is reported corrupt with nothing written)
-- newest returns the time until the newest entry leaves the window (µs),
-- or nil when it is scored in the future (not a request time).
local function newest()
  local e = call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local rs = (tonumber(e[2]) or 1 / 0) * 1000 + P - now
  if not (rs <= 2 * P) then return nil end
  if rs < 0 then rs = 0 end
  return rs
end
if full and not call('ZSCORE', key, base .. '1') then
  -- refused, nothing consumed: say when it would fit. The entry that must
  -- leave before cost more fit is the window's entry of rank
  -- used + cost - RATE - 1 (0-based, oldest first); the entries that left
  -- the window (not trimmed) all come before the window's, so that is the
  -- log's rank ZCARD - used more (ZRANGE by rank: O(log n), where
  -- ZRANGEBYSCORE's LIMIT offset walks the entries it skips)
  local r = int_str(call('ZCARD', key) + cost - RATE - 1)
  local e = call('ZRANGE', key, r, r, 'WITHSCORES')
  local rt = (tonumber(e[2]) or 1 / 0) * 1000 + P - now
  local rs = newest()
  -- scores are server times: one far in the future (or inf) is not what
  -- this script writes
  if not rs or not (rt <= 2 * P) then return {'corrupt', KI, 'entry scored in the future'} end
  local av = RATE - used
  if av < 0 then av = 0 end
  return fmt('limit %d %d %d', av, rt, rs)
end
-- a resend of an admitted request (its first member is logged): report it
-- again, as things stand
local rs = newest()
if not rs then return {'corrupt', KI, 'entry scored in the future'} end
local rem = RATE - used
if rem < 0 then rem = 0 end
return fmt('ok %d 0 %d', rem, rs)
