-- sliding.lua: Sliding (log), one rule (appended to single.lua, which
-- lists KEYS, ARGV and the reply). The state key is the sorted set of admitted
-- requests, scored like the seeds' logs: Unix milliseconds, integers (which
-- a small log's listpack stores and compares as integers). Members are
-- "<nonce>-<i>" (the nonce is unique per call), so requests in the same
-- millisecond stay distinct.
--
-- Server time is read in µs. A request is logged at the millisecond that
-- ends after it (rounded up), and an entry scored s counts while
-- s ms + period is still ahead: rounding only ever keeps a request in the
-- window a little longer, never shorter, so the log never over-admits.
-- Entries that left the window are trimmed first, on every call (this
-- forgets nothing that could still count, so a refusal still consumes
-- nothing), so the log's size is the count: ZCARD, O(1), instead of a
-- ZCOUNT over the range. An admitted request is added and the TTL renewed
-- to one period after its score.

local t = call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- entries scored at or before cut (ms) have left the window
local cut = floor((now - P) / 1000)
local trimmed = pcall_('ZREMRANGEBYSCORE', key, '-inf', fmt('%.0f', cut))
if type(trimmed) == 'table' then return {-1, KI, 0, 0} end
local used = call('ZCARD', key)
local av = RATE - used
if av < cost then
  -- every entry is in the window: the one that must leave before cost
  -- more fit is at rank used + cost - RATE - 1 (0-based, oldest first)
  local e = call('ZRANGE', key, used + cost - RATE - 1, used + cost - RATE - 1, 'WITHSCORES')
  local rt = (tonumber(e[2]) or 1 / 0) * 1000 + P - now
  e = call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local rs = (tonumber(e[2]) or 1 / 0) * 1000 + P - now
  -- scores are server times: one far in the future (or inf, nan) is not
  -- what this script writes
  if not (rs <= 2 * P) then return {-1, KI, 0, 0} end
  if rs < 0 then rs = 0 end
  if av < 0 then av = 0 end
  return {0, av, rt, rs}
end
local ms = ceil(now / 1000)
local score = fmt('%.0f', ms)
local base = ARGV[2] .. '-'
if cost == 1 then
  call('ZADD', key, score, base .. '1')
else
  local j = 1
  while j <= cost do
    local args = {}
    local last = math.min(cost, j + 255)
    for m = j, last do
      args[#args + 1] = score
      args[#args + 1] = base .. m
    end
    call('ZADD', key, unpack(args))
    j = last + 1
  end
end
-- The TTL is one period from the rounded-up score: PMS + 1 ms from now. A
-- seed key without a window segment may be shared with a limiter of a
-- longer window: never shorten the TTL it set. A key naming its window is
-- only ever given that window as its TTL.
if not SHARED_KEY or call('PTTL', key) < PMS + 1 then call('PEXPIRE', key, PMS + 1) end
return {1, av - cost, 0, ms * 1000 + P - now}
