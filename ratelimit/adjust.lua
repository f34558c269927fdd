-- adjust.lua: Refund(id, cost) and Penalize(id, cost): give cost units
-- back to every rule of the policy, or take cost more from every rule even
-- past its limit; one script, on server time. The policy travels in ARGV
-- as allow.lua's does (the same JSON array, in ARGV[6] here; allow.lua's
-- header describes it).
--
-- KEYS       as allow.lua's (block key, optional config hash, state keys,
--            WithAutoBlock's refusal count), then KEYS[#KEYS], the marker
--            ratelimit:adjust:{id}:{request_id} of this call
-- ARGV[1]    cost      integer >= 1 (checked in Go)
-- ARGV[2]    '1' refund, '0' penalize
-- ARGV[3]    nonce     the sliding-log members to remove (a Reservation's:
--                      "<nonce>-1" .. "<nonce>-<cost>") or to add
--                      (Penalize); '' for Refund: the newest cost entries
-- ARGV[4]    channel   where a refund announces the identifier, '' for none
-- ARGV[5]    payload   the identifier
-- ARGV[6]    policy    allow.lua's ARGV[4], the JSON array Q: here Q[4]
--                      says whether KEYS[2] is the config hash, and
--                      Q[5 + 4(i-1) ..] are rule i's four values (algorithm
--                      name, rate, period ms, burst); Q[1..3] are not read.
--                      The state keys are placed as allow.lua places them.
-- Returns {'ok', 1} once done, {'ok', 0} when the marker says this request was
-- done already (a resend after a lost reply: nothing more changes),
-- {'corrupt', i, why} when KEYS[i] holds what the limiter does not write.
-- Every key is read and checked before the first write (the marker's
-- included), so a corrupt reply comes with nothing written.
--
-- A refund never takes a rule below empty (a counter below 0, a GCRA time
-- before now) and leaves state of an earlier window alone; a penalty
-- writes each rule's state as an admitted request of that cost would,
-- without the limit check. TTLs are set as allow.lua sets them.

local call, pcall_ = redis.call, redis.pcall
local tonumber, floor, ceil, match = tonumber, math.floor, math.ceil, string.match
local cost = tonumber(ARGV[1])
local refund = ARGV[2] == '1'
local Q = cjson.decode(ARGV[6])
local n = (#Q - 4) / 4
local ci = 0 -- KEYS index of the config hash, 0 for none
if Q[4] then ci = 2 end
-- K[i], the KEYS index of rule i's state, and LOG, the sliding log's (0
-- for none), as in allow.lua
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

-- First every key this call reads is read and checked (the config hash,
-- each rule's state, the log's type), then the marker and the rules are
-- written: a call that finds a key corrupt writes nothing, not even its
-- marker (so a resend is checked again). A resend reads as much as the
-- first call did before its marker says it is done.
local cfg = {}
if ci > 0 then
  local v = pcall_('HMGET', KEYS[ci], 'per_minute', 'per_hour', 'per_day', 'burst')
  if v.err then return {'corrupt', ci, 'not a hash (wrong type)'} end
  for f = 1, 4 do cfg[f] = v[f] and match(v[f], '^[1-9]%d*$') and tonumber(v[f]) end
end

-- V[i], rule i's stored value as read (false for none; the log's is read
-- after the loop, by type)
local V = {}
local logmax, loghit = 0, false
for i = 1, n do
  local a, k = Q[1 + 4 * i], K[i]
  if a == 'sliding' then
    local p = Q[3 + 4 * i] * 1000
    if p > logmax then logmax = p end
    loghit = true
  else
    local v = pcall_('GET', KEYS[k])
    local wt = type(v) == 'table' -- another type than a string
    if a == 'fixed' then
      -- a counter as INCRBY writes it, of at most 15 digits as allow.lua
      -- reads it (so the INCRBY below cannot fail)
      if wt or (v and (#v > 15 or not match(v, '^%d+$'))) then return {'corrupt', k, 'not a non-negative integer counter'} end
    elseif a == 'swc' then
      if wt then return {'corrupt', k, 'not a string (wrong type)'} end
      if v and not match(v, '^%d+:%d+:%d+$') then return {'corrupt', k, 'not bucket:count:previous'} end
    elseif wt or (v and not match(v, '^%d+$')) then -- 'gcra'
      return {'corrupt', k, 'not a time in µs'}
    end
    V[i] = v or false
  end
end
if loghit then
  local t = call('TYPE', KEYS[LOG]).ok
  if t ~= 'zset' and t ~= 'none' then return {'corrupt', LOG, 'not a sorted set (wrong type)'} end
end

-- every key checked: now the marker (a resend stops here), then the writes
if not call('SET', KEYS[#KEYS], cost, 'NX', 'PX', 180000) then return {'ok', 0} end

local now = now_us()
for i = 1, n do
  local b = 4 * i
  local a, k, r, p, bu = Q[b + 1], K[i], Q[b + 2], Q[b + 3] * 1000, Q[b + 4]
  local f = (p == 60000000 and 1) or (p == 3600000000 and 2) or (p == 86400000000 and 3)
  if f and cfg[f] then r = cfg[f] end
  if a == 'gcra' and cfg[4] then bu = cfg[4] end
  if bu == 0 then bu = r end
  local key, v = KEYS[k], V[i]

  if a == 'fixed' then
    if refund then
      if v and tonumber(v) > 0 then call('DECRBY', key, math.min(cost, tonumber(v))) end
    else
      call('INCRBY', key, cost)
      if call('PTTL', key) < 0 then call('PEXPIRE', key, p / 1000) end
    end

  elseif a == 'swc' then
    local idx = floor(now / p)
    local w, cur, prev = idx, 0, 0
    if v then
      local w1, c1, p1 = match(v, '^(%d+):(%d+):(%d+)$')
      w1, c1, p1 = tonumber(w1), tonumber(c1), tonumber(p1)
      if w1 >= idx then w, cur, prev = w1, c1, p1
      elseif w1 == idx - 1 then prev = c1 end
    end
    if refund then cur = cur - cost; if cur < 0 then cur = 0 end
    else cur = cur + cost end
    if v or not refund then
      local ttl = ceil(((w * p) + 2 * p - now) / 1000)
      if ttl < 1 then ttl = 1 end
      call('SET', key, string.format('%.0f:%.0f:%.0f', w, cur, prev), 'PX', ttl)
    end

  elseif a == 'gcra' then
    local T = p / r
    local tat = tonumber(v) or now
    if tat < now then tat = now end
    local nt
    if refund then nt = tat - cost * T else nt = tat + cost * T end
    nt = ceil(nt - 1e-6)
    if nt <= now then
      if v then call('DEL', key) end
    else
      call('SET', key, int_str(nt), 'PX', ceil((nt - now) / 1000))
    end
  end
end

if loghit then
  local key = KEYS[LOG]
  if refund then
    if ARGV[3] == '' then
      call('ZPOPMAX', key, cost)
    else
      local ms = {}
      for m = 1, cost do ms[m] = ARGV[3] .. '-' .. m end
      batched('ZREM', key, ms)
    end
  else
    local score = int_str(ceil(now / 1000))
    local zs = {}
    for m = 1, cost do
      zs[2 * m - 1] = score
      zs[2 * m] = ARGV[3] .. '-' .. m
    end
    batched('ZADD', key, zs)
    if call('PTTL', key) < logmax / 1000 + 1 then call('PEXPIRE', key, logmax / 1000 + 1) end
  end
end

if refund and ARGV[4] ~= '' then call('PUBLISH', ARGV[4], ARGV[5]) end
return {'ok', 1}
