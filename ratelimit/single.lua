-- single.lua: the prelude of the single-rule scripts (fixed.lua,
-- sliding.lua, swc.lua, gcra.lua), which Go appends to it. A Limiter whose
-- Policy has one rule and no runtime config runs one of them for Allow and
-- AllowN; Peek and every other Limiter run the general allow.lua, whose
-- results these scripts reproduce exactly.
--
-- Go replaces the marker below with the rule's numbers: rate, period in
-- milliseconds, capacity (the rate, or the burst for GCRA), and prepends
-- "local CHECK_BLOCK = true" (false for WithoutBlocks) and "local
-- SHARED_KEY = false" (true when a sliding log has a seed key without a
-- window segment, which limiters of other windows may share).
--
-- KEYS[1]  block key   ratelimit:block:{id}   (STRING with a TTL while blocked);
--          not passed at all for WithoutBlocks (then CHECK_BLOCK is false)
-- KEYS[2]  state key of the rule (same hash tag); KEYS[1] without the block key
-- ARGV[1]  cost        integer, 1 <= cost <= capacity (checked in Go)
-- ARGV[2]  nonce       sliding.lua only: unique per call
-- Returns {code, remaining, retry_us, reset_us}:
--   code 1: admitted and counted; retry_us is 0.
--   code 0: refused, nothing consumed.
--   code 3: blocked; retry_us = reset_us = the block's remaining time
--           (MaxBlock for a block key without a TTL).
--   code -1: KEYS[remaining] holds a value these scripts do not write
--            (wrong type, or a number not in the strict format they write).
-- remaining and reset_us are the rule's, as in allow.lua.

local RATE, PMS, CAP = --[[limit]]
local P = PMS * 1000 -- period in µs
local call, pcall_ = redis.call, redis.pcall
local tonumber, floor, ceil = tonumber, math.floor, math.ceil
local fmt = string.format
local cost = tonumber(ARGV[1])
local KI = #KEYS -- the state key's index: 2, or 1 without the block key
local key = KEYS[KI]

if CHECK_BLOCK then
  local bttl = call('PTTL', KEYS[1])
  if bttl > 0 then return {3, 0, bttl * 1000, bttl * 1000} end
  -- a block key without a TTL (not written by Block) counts as blocked
  -- for MaxBlock (366 days, in µs)
  if bttl == -1 then return {3, 0, 31622400000000, 31622400000000} end
end
