-- allow.lua: check every rule of a policy and, unless peeking, count the
-- request in all of them: all or nothing, in one script, on server time.
-- Allow, AllowN, AllowAtMost, Peek and Reserve run it, for a policy of one
-- rule as of several: each algorithm is written once, here.
--
-- The policy travels in ARGV (so every Limiter sends this same script,
-- one SHA): ARGV[4] is the Limiter's policy as a JSON array, built once in
-- New (limiter.go, policyHead); adjust.lua reads the same array. One
-- argument decoded by cjson costs Redis less than a dozen arguments.
--
-- KEYS[1]    block key     ratelimit:block:{id}; passed always, read only
--                          when Q[1] is 1
-- KEYS[2..]  the optional config hash ratelimit:config:{id}, then the
--            state keys of the rules (see below), then WithAutoBlock's
--            refusal count
--            ratelimit:refusals:{id} last (KEYS[#KEYS]); every key carries
--            the identifier as its hash tag.
-- ARGV[1]    cost          integer >= 1; in mode '2', the most to take
-- ARGV[2]    mode          '0' allow (consume), '1' peek (write nothing),
--                          '2' at most: take as many units as every rule
--                          has left, from 1 up to ARGV[1]; refused (and
--                          timed) as a unit-cost request when none is left
-- ARGV[3]    nonce         unique per call, the same on a resend; names
--                          the request's sliding-log members
-- ARGV[4]    policy        a JSON array Q (flags are JSON booleans and
--                          numbers few: Redis parses each number with
--                          strtod, some 1.5k instructions):
--   Q[1]     true: read the block key; false: not (WithoutBlocks)
--   Q[2]     true when the sliding log's key has no window segment
--            (limiters of other windows may share it, so its TTL is only
--            ever lengthened)
--   Q[3]     WithAutoBlock's [refusals, window ms, block ms] (KEYS[#KEYS]
--            is then the refusal count), false without it
--   Q[4]     true when KEYS[2] is the config hash
--   Q[5+4(i-1) ..]  four values per rule i: algorithm ('fixed', 'sliding',
--            'swc', 'gcra': Algorithm.String, the names Go defines), rate,
--            period in ms, burst (GCRA; 0 = rate). A rule of a minute, an
--            hour or a day takes its rate from the config field
--            per_minute, per_hour or per_day.
-- The rules' state keys follow the block key and the config hash in KEYS
-- in the rules' order, except that every Sliding rule shares one sorted
-- set (the log), at the first Sliding rule's place.
-- Returns
--   {'ok', limit, remaining, retry_us, reset_us, index, granted}
--                         admitted (peek: would be); granted is the number
--                         of units taken (the cost; in mode '2', 1..ARGV[1])
--   {'limit', limit, remaining, retry_us, reset_us, index}  refused, nothing consumed
--     limit, remaining and reset_us describe the binding rule (fewest
--     remaining), index is its position (1-based); retry_us is the longest
--     wait among the refusing rules (0 when admitted), or -1 when the cost
--     is above the (configured) capacity of a rule: no wait admits it.
--   {'conflict', block_us}    blocked: the block's remaining time (also when
--                         this refusal set an automatic block)
--   {'corrupt', i, why}       KEYS[i] holds what this package does not write,
--                         or a config field out of range
-- Nothing is written unless every rule admits the request, except that a
-- refused check counts the refusal (WithAutoBlock) and gives a
-- fixed-window counter found without a TTL its TTL back (a repair; the
-- count is unchanged). Peek writes nothing at all. Every key is read and
-- checked before the first write: a corrupt reply comes with nothing
-- written.
--
-- The reply vocabulary is spelled as table literals (a prelude helper is a
-- closure made on every call).
--
-- Resends: go-redis resends a command whose reply was lost, and a whole
-- pipeline when its connection broke. With a sliding log, the request's
-- first member tells that the call was admitted already: it is reported
-- admitted again, as things stand, and nothing is counted. Without one, a
-- resend counts the request again (see the package doc, Retries).

local call, pcall_ = redis.call, redis.pcall
local tonumber, floor, ceil = tonumber, math.floor, math.ceil
local fmt, match = string.format, string.match
local MAX_COUNT = 1099511627776 -- 2^40: no rate, burst or count is larger
local MAX_BLOCK_MS = 31622400000 -- the longest block, 366 days (maxBlock in Go)

-- block_ttl(k) returns how long the block key k still blocks, in ms: 0 when
-- k does not exist; MAX_BLOCK_MS for a block key without a TTL (Block never
-- writes one; it counts as the longest block); else its PTTL. It returns
-- nil and a reason when k holds what Block does not write: another type, a
-- value other than a request ID (letters, digits, '-' and '_', at most 32),
-- or a TTL above 366 days. (block.lua reads the key the same way.)
local function block_ttl(k)
  local v = pcall_('GET', k)
  if not v then return 0 end
  if type(v) == 'table' then return nil, 'not a string (wrong type)' end
  if #v > 32 or not match(v, '^[%w_%-]+$') then return nil, 'not a request ID written by Block' end
  local ttl = call('PTTL', k)
  if ttl > MAX_BLOCK_MS then return nil, 'TTL above 366 days' end
  if ttl < 0 then return MAX_BLOCK_MS end
  return ttl
end


local cost = tonumber(ARGV[1])
local peek = ARGV[2] == '1'
-- at most: the rules are checked for one unit, and the grant is sized
-- after the loop from what every rule has left
local atmost = ARGV[2] == '2'
local want = cost
if atmost then cost = 1 end
local Q = cjson.decode(ARGV[4]) -- the policy (see the header)
local n = (#Q - 4) / 4
local ci = 0 -- KEYS index of the config hash, 0 for none
if Q[4] then ci = 2 end
-- K[i], the KEYS index of rule i's state, and LOG, the sliding log's (0
-- for none)
local K, LOG, nk = {}, 0, ci > 0 and 3 or 2
for i = 1, n do
  if Q[1 + 4 * i] ~= 'sliding' then
    K[i] = nk
    nk = nk + 1
  elseif LOG > 0 then
    K[i] = LOG
  else
    LOG, K[i] = nk, nk
    nk = nk + 1
  end
end

if Q[1] then
  -- almost always absent: one GET decides, and block_ttl reads and checks
  -- the key only when it is there
  if pcall_('GET', KEYS[1]) then
    local b, why = block_ttl(KEYS[1])
    if not b then return {'corrupt', 1, why} end
    if b > 0 then return {'conflict', b * 1000} end
  end
end

local cfg
if ci > 0 then
  local v = pcall_('HMGET', KEYS[ci], 'per_minute', 'per_hour', 'per_day', 'burst')
  if v.err then return {'corrupt', ci, 'not a hash (wrong type)'} end
  for f = 1, 4 do
    if v[f] then
      -- strictly what SetConfig writes: a decimal integer in 1 .. 2^40
      local x = #v[f] <= 13 and match(v[f], '^[1-9]%d*$') and tonumber(v[f])
      if not x or x > MAX_COUNT then
        return {'corrupt', ci, 'field ' .. ({'per_minute', 'per_hour', 'per_day', 'burst'})[f] .. ' is not an integer in 1..2^40'}
      end
      v[f] = x
    end
  end
  cfg = v
end

local replay = false
if LOG > 0 and not peek then
  local s = pcall_('ZSCORE', KEYS[LOG], ARGV[3] .. '-1')
  if type(s) == 'table' then return {'corrupt', LOG, 'not a sorted set (wrong type)'} end
  if s then replay, peek = true, true end
end

-- Server time in µs, read only when a rule needs it (a fixed window's clock
-- is its counter's TTL).
local now
-- Per-rule values, 11 slots per rule at o = (i-1)*11: algorithm, KEYS index,
-- period (µs), capacity, available, retry (µs; -1 = never: the cost is
-- above the capacity), reset if nothing is written (µs; -1 = compute
-- later), reset after the write (µs), then algorithm state for the write
-- (fixed: TTL; swc: bucket, count, previous; gcra: new arrival time, the
-- current one, the emission interval).
local S = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
local logmax = 0
local admit = true
for i = 1, n do
  local b = 4 * i
  local o = (i - 1) * 11
  local a, k, r, p, bu = Q[b + 1], K[i], Q[b + 2], Q[b + 3] * 1000, Q[b + 4]
  if cfg then
    -- the config field of the rule's period, if any
    local f = (p == 60000000 and 1) or (p == 3600000000 and 2) or (p == 86400000000 and 3)
    if f and cfg[f] then
      r = cfg[f]
      -- the caps New enforces: a log of at most 100 000 entries, and a
      -- GCRA emission interval of at least 10 µs
      if (a == 'sliding' and r > 100000) or (a == 'gcra' and p / r < 10) then
        return {'corrupt', ci, ({'per_minute', 'per_hour', 'per_day'})[f] .. ' = ' .. int_str(r) .. ' is above what rule ' .. (i - 1) .. ' allows'}
      end
    end
    if a == 'gcra' and cfg[4] then bu = cfg[4] end
  end
  if bu == 0 then bu = r end
  local c = r
  if a == 'gcra' then c = bu end
  -- a cost above the capacity is refused whatever the state, with no
  -- retry time (Go reports ratelimit.Never); nothing else changes
  local never = cost > c
  if a ~= 'fixed' and not now then now = now_us() end
  local key = KEYS[k]
  local av, rt, rs0, rs1 = 0, 0, 0, 0

  if a == 'fixed' then
    local v = pcall_('GET', key)
    if type(v) == 'table' then return {'corrupt', k, 'not an integer counter'} end
    local used, ttl = 0, -2
    if v then
      -- strictly a non-negative decimal integer, as INCRBY writes it
      if #v > 15 or not match(v, '^%d+$') then return {'corrupt', k, 'not a non-negative integer counter'} end
      used = tonumber(v)
      if used > MAX_COUNT then return {'corrupt', k, 'counter out of range'} end
      ttl = call('PTTL', key)
      if ttl > p / 1000 then return {'corrupt', k, 'TTL longer than the window'} end
    end
    av = r - used
    if ttl > 0 then rs0 = ttl * 1000; rs1 = rs0
    elseif v then rs0 = p; rs1 = p
    else rs1 = p end
    rt = rs1
    S[o + 9] = ttl

  elseif a == 'sliding' then
    -- scores are Unix ms, rounded up (see sliding.lua): an entry scored s
    -- counts while s ms + p is ahead, so those above floor((now - p) / 1000)
    local lo = '(' .. int_str(floor((now - p) / 1000))
    local used = pcall_('ZCOUNT', key, lo, '+inf')
    if type(used) == 'table' then return {'corrupt', k, 'not a sorted set (wrong type)'} end
    av = r - used
    if av < cost and not never then
      local e = call('ZRANGEBYSCORE', key, lo, '+inf', 'WITHSCORES', 'LIMIT', used + cost - r - 1, 1)
      rt = (tonumber(e[2]) or 1 / 0) * 1000 + p - now
      -- scores are server times: far future (inf) is corrupt
      if not (rt <= 2 * p) then return {'corrupt', k, 'entry scored in the future'} end
    end
    if used > 0 then rs0 = -1 end
    rs1 = ceil(now / 1000) * 1000 + p - now -- once this request is logged
    if p > logmax then logmax = p end

  elseif a == 'swc' then
    local v = pcall_('GET', key)
    if type(v) == 'table' then return {'corrupt', k, 'not a string (wrong type)'} end
    local idx = floor(now / p)
    local cur, prev = 0, 0
    if v then
      local w, c1, p1 = match(v, '^(%d+):(%d+):(%d+)$')
      if not w or #v > 50 then return {'corrupt', k, 'not bucket:count:previous'} end
      w, c1, p1 = tonumber(w), tonumber(c1), tonumber(p1)
      if w > idx + 1 or c1 > MAX_COUNT or p1 > MAX_COUNT then return {'corrupt', k, 'bucket or count out of range'} end
      if w >= idx then idx, cur, prev = w, c1, p1
      elseif w == idx - 1 then prev = c1 end
    end
    local start = idx * p
    local frac = (now - start) / p
    if frac < 0 then frac = 0 end
    av = floor(r - prev * (1 - frac) - cur + 1e-9)
    if av < cost and not never then
      local at
      if cur + cost <= r then at = start + p * (1 - (r - cur - cost) / prev)
      else at = start + p + p * (1 - (r - cost) / cur) end
      rt = ceil(at - now - 1e-6)
      if rt < 1 then rt = 1 end
    end
    if cur > 0 then rs0 = start + 2 * p - now
    elseif prev > 0 then rs0 = start + p - now end
    rs1 = start + 2 * p - now
    S[o + 9], S[o + 10], S[o + 11] = idx, cur, prev

  else -- 'gcra'
    local v = pcall_('GET', key)
    if type(v) == 'table' then return {'corrupt', k, 'not a string (wrong type)'} end
    local T = p / r
    local tat = now
    if v then
      -- strictly µs since the epoch as written here: digits only, at most 17
      if #v > 17 or not match(v, '^%d+$') then return {'corrupt', k, 'not a time in µs'} end
      local x = tonumber(v)
      if x > now then
        if x - now > bu * T + 1 then
          local ttl = call('PTTL', key)
          if ttl < 0 or x - now > ttl * 1000 + 1000 then return {'corrupt', k, 'time ahead of the key\'s TTL'} end
        end
        tat = x
      end
    end
    av = floor(bu - (tat - now) / T + 1e-9)
    if av < cost and not never then
      rt = ceil(tat - now - (bu - cost) * T - 1e-6)
      if rt < 1 then rt = 1 end
    end
    rs0 = ceil(tat - now - 1e-6)
    local nt = ceil(tat + cost * T - 1e-6)
    rs1 = ceil(nt - now - 1e-6)
    if rs1 < 1 then rs1 = 1 end
    S[o + 9], S[o + 10], S[o + 11] = nt, tat, T
  end
  if never then rt = -1 end
  S[o + 1], S[o + 2], S[o + 3], S[o + 4] = a, k, p, c
  S[o + 5], S[o + 6], S[o + 7], S[o + 8] = av, rt, rs0, rs1
  if av < cost then admit = false end
end

if admit and atmost then
  -- take what every rule has left, up to want; a GCRA rule's new arrival
  -- time and reset follow the grant
  local g = want
  for i = 1, n do
    local av = S[(i - 1) * 11 + 5]
    if av < g then g = av end
  end
  cost = g
  for i = 1, n do
    local o = (i - 1) * 11
    if S[o + 1] == 'gcra' then
      local nt = ceil(S[o + 10] + cost * S[o + 11] - 1e-6)
      local rs = ceil(nt - now - 1e-6)
      if rs < 1 then rs = 1 end
      S[o + 8], S[o + 9] = rs, nt
    end
  end
end

local commit = admit and not peek
if not commit then
  -- refused or peeking: a sliding rule's reset is until its newest entry
  -- leaves the window. Read here, before the refused path's writes below,
  -- so that a log scored in the future is reported with nothing written.
  for i = 1, n do
    local o = (i - 1) * 11
    if S[o + 7] < 0 then
      local e = call('ZRANGE', KEYS[S[o + 2]], -1, -1, 'WITHSCORES')
      local res = (tonumber(e[2]) or 1 / 0) * 1000 + S[o + 3] - now
      if not (res <= 2 * S[o + 3]) then return {'corrupt', S[o + 2], 'entry scored in the future'} end
      if res < 0 then res = 0 end
      S[o + 7] = res
    end
  end
end
if commit then
  for i = 1, n do
    local o = (i - 1) * 11
    local a, key = S[o + 1], KEYS[S[o + 2]]
    if a == 'fixed' then
      call('INCRBY', key, cost)
      if S[o + 9] < 0 then call('PEXPIRE', key, S[o + 3] / 1000) end
    elseif a == 'swc' then
      call('SET', key, fmt('%.0f:%.0f:%.0f', S[o + 9], S[o + 10] + cost, S[o + 11]), 'PX', ceil(S[o + 8] / 1000))
    elseif a == 'gcra' then
      call('SET', key, int_str(S[o + 9]), 'PX', ceil(S[o + 8] / 1000))
    end
  end
  if LOG > 0 then
    local key = KEYS[LOG]
    call('ZREMRANGEBYSCORE', key, '-inf', int_str(floor((now - logmax) / 1000)))
    local score = int_str(ceil(now / 1000))
    local base = ARGV[3] .. '-'
    local zs = {}
    for m = 1, cost do
      zs[2 * m - 1] = score
      zs[2 * m] = base .. m
    end
    batched('ZADD', key, zs)
    -- a key without a window segment may be shared with a limiter of a
    -- longer window: never shorten its TTL (see sliding.lua); one period
    -- after the rounded-up score: + 1 ms
    if not Q[2] or call('PTTL', key) < logmax / 1000 + 1 then call('PEXPIRE', key, logmax / 1000 + 1) end
  end
elseif not peek then
  -- refused. WithAutoBlock counts the refusal in KEYS[#KEYS] first: that
  -- INCR is the last check (a value it cannot count is reported corrupt,
  -- and INCR then wrote nothing) and the first write
  local auto = Q[3]
  local rk, c = KEYS[#KEYS], 0
  if auto then
    c = pcall_('INCR', rk)
    if type(c) == 'table' then
      -- a refusal of the server (OOM) is its error, not the count's
      local code = string.match(c.err, '^(%u+) ')
      if code ~= 'ERR' and code ~= 'WRONGTYPE' then return c end
      return {'corrupt', #KEYS, 'not a refusal count'}
    end
  end
  -- a fixed-window counter found without a TTL gets it back (a repair)
  for i = 1, n do
    local o = (i - 1) * 11
    if S[o + 1] == 'fixed' and S[o + 9] == -1 then call('PEXPIRE', KEYS[S[o + 2]], S[o + 3] / 1000) end
  end
  if auto then
    -- WithAutoBlock: at the n-th refusal within the window, block (only
    -- ever lengthening a block) and start over
    if c == 1 or call('PTTL', rk) < 0 then call('PEXPIRE', rk, int_str(auto[2])) end
    if c >= auto[1] then
      call('DEL', rk)
      -- the block key was read and checked on entry (WithAutoBlock
      -- excludes WithoutBlocks, so Q[1] is set): this check cannot fail
      local b, why = block_ttl(KEYS[1])
      if not b then return {'corrupt', 1, why} end
      if b < auto[3] then
        call('SET', KEYS[1], 'auto', 'PX', int_str(auto[3]))
        b = auto[3]
      end
      return {'conflict', b * 1000}
    end
  end
end
-- a resend of an admitted call is reported admitted, as things stand now
-- (its units are in the remaining counts already); in mode '2' its grant
-- is the number of its log entries, members 1..g: found by bisection
local granted = cost
if replay then
  admit = true
  if atmost then
    local lo, hi = 1, want
    while lo < hi do
      local mid = ceil((lo + hi) / 2)
      if call('ZSCORE', KEYS[LOG], ARGV[3] .. '-' .. int_str(mid)) then lo = mid else hi = mid - 1 end
    end
    granted = lo
  end
end

local bi, brem, bres, retry = 1, -1, 0, 0
local never = false
for i = 1, n do
  local o = (i - 1) * 11
  local rem, res = S[o + 5], S[o + 7]
  if commit then rem = rem - cost; res = S[o + 8] end
  if rem < 0 then rem = 0 end
  if brem < 0 or rem < brem or (rem == brem and res > bres) then bi, brem, bres = i, rem, res end
  if not admit and S[o + 5] < cost then
    if S[o + 6] < 0 then never = true elseif S[o + 6] > retry then retry = S[o + 6] end
  end
end
if admit then return {'ok', S[(bi - 1) * 11 + 4], brem, retry, bres, bi, granted} end
if never then retry = -1 end
return {'limit', S[(bi - 1) * 11 + 4], brem, retry, bres, bi}
