-- single.lua: the head of the single-rule scripts (fixed.lua, sliding.lua,
-- swc.lua, gcra.lua, which Go appends to it, after blockkey.lua). A Limiter
-- whose Policy has one rule and no runtime config runs one of them for
-- Allow and AllowN; Peek and every other Limiter run the general
-- allow.lua, whose results these scripts reproduce exactly.
--
-- Go replaces the marker below with the rule's numbers: rate, period in
-- milliseconds, capacity (the rate, or the burst for GCRA), then the
-- period and the period + 1 ms as strings (Redis formats a Lua number
-- passed to redis.call with '%.17g', about 2k instructions), and prepends
-- "local CHECK_BLOCK = true" (false for WithoutBlocks) and "local
-- SHARED_KEY = false" (true when a sliding log's key has no window
-- segment, so that limiters of other windows may share it).
--
-- KEYS[1]  block key   ratelimit:block:{id}; not passed at all
--          WithoutBlocks (then CHECK_BLOCK is false)
-- KEYS[#KEYS] state key of the rule (same hash tag)
-- ARGV[1]  cost        integer, 1 <= cost <= capacity (checked in Go)
-- ARGV[2]  nonce       sliding.lua only: unique per call, the same on a
--                      resend
-- Returns (ok and limit as one string of words: '%d' truncates as Redis's
-- table reply does, and no table is built)
--   ok(remaining, retry_us, reset_us)     admitted and counted; retry_us 0
--   limit(remaining, retry_us, reset_us)  refused, nothing consumed
--   conflict(block_us)                    blocked: the block's remaining time
--   corrupt(i, why)                       KEYS[i] holds what these scripts do
--                                         not write (wrong type, a number out
--                                         of the strict format or range)
-- remaining and reset_us are the rule's, as in allow.lua. These scripts
-- spell the call layer's reply vocabulary as table literals ({'ok', ...})
-- instead of calling prelude.lua's ok(), limit(), conflict() and corrupt():
-- a prelude helper is a closure made anew on every call (some 350 VM
-- instructions each, measured with callgrind), which the one-rule fast path
-- does not pay.

local RATE, PMS, CAP, PMS_S, PMS1_S = --[[limit]]
local P = PMS * 1000 -- period in µs
local MAX_COUNT = 1099511627776 -- 2^40: no rate, burst or count is larger
local call, pcall_ = redis.call, redis.pcall
local floor, ceil, fmt = math.floor, math.ceil, string.format
local cost = tonumber(ARGV[1])
local KI = #KEYS -- the state key's index: 2, or 1 without the block key
local key = KEYS[KI]

if CHECK_BLOCK then
  -- almost always absent: one GET decides, and block_ttl (blockkey.lua)
  -- reads and checks the key only when it is there
  if pcall_('GET', KEYS[1]) then
    local b, why = block_ttl(KEYS[1])
    if not b then return {'corrupt', 1, why} end
    if b > 0 then return {'conflict', b * 1000} end
  end
end
