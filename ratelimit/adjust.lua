-- adjust.lua: Refund(id, cost) and Penalize(id, cost): give cost units
-- back to every rule of the policy, or take cost more from every rule even
-- past its limit; one script, on server time (after blockkey.lua; the
-- policy is compiled into R as in allow.lua, whose header describes it).
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
-- Returns ok(1) once done, ok(0) when the marker says this request was
-- done already (a resend after a lost reply: nothing more changes),
-- corrupt(i, why) when KEYS[i] holds what the limiter does not write.
--
-- A refund never takes a rule below empty (a counter below 0, a GCRA time
-- before now) and leaves state of an earlier window alone; a penalty
-- writes each rule's state as an admitted request of that cost would,
-- without the limit check. TTLs are set as allow.lua sets them.

local R = {--[[rules]]}
local call, pcall_ = redis.call, redis.pcall
local tonumber, floor, ceil, match = tonumber, math.floor, math.ceil, string.match
local cost = tonumber(ARGV[1])
local refund = ARGV[2] == '1'
local n, LOG = R[2], R[3]

if not call('SET', KEYS[#KEYS], cost, 'NX', 'PX', 60000) then return ok(0) end

local cfg = {}
if R[1] > 0 then
  local v = pcall_('HMGET', KEYS[R[1]], 'per_minute', 'per_hour', 'per_day', 'burst')
  if v.err then return corrupt(R[1], 'not a hash (wrong type)') end
  for f = 1, 4 do cfg[f] = v[f] and match(v[f], '^[1-9]%d*$') and tonumber(v[f]) end
end

local now = now_us()
local logmax, loghit = 0, false
for i = 1, n do
  local b = 3 + (i - 1) * 6
  local a, k, r, p, bu = R[b + 1], R[b + 2], R[b + 3], R[b + 4] * 1000, R[b + 5]
  local f = R[b + 6]
  if f > 0 and cfg[f] then r = cfg[f] end
  if a == 4 and cfg[4] then bu = cfg[4] end
  if bu == 0 then bu = r end
  local key = KEYS[k]

  if a == 1 then
    local v = pcall_('GET', key)
    if type(v) == 'table' or (v and not match(v, '^%d+$')) then return corrupt(k, 'not a non-negative integer counter') end
    if refund then
      if v and tonumber(v) > 0 then call('DECRBY', key, math.min(cost, tonumber(v))) end
    else
      call('INCRBY', key, cost)
      if call('PTTL', key) < 0 then call('PEXPIRE', key, p / 1000) end
    end

  elseif a == 2 then
    if p > logmax then logmax = p end
    loghit = true

  elseif a == 3 then
    local v = pcall_('GET', key)
    if type(v) == 'table' then return corrupt(k, 'not a string (wrong type)') end
    local idx = floor(now / p)
    local w, cur, prev = idx, 0, 0
    if v then
      local w1, c1, p1 = match(v, '^(%d+):(%d+):(%d+)$')
      if not w1 then return corrupt(k, 'not bucket:count:previous') end
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

  else
    local v = pcall_('GET', key)
    if type(v) == 'table' or (v and not match(v, '^%d+$')) then return corrupt(k, 'not a time in µs') end
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
  local t = call('TYPE', key).ok
  if t ~= 'zset' and t ~= 'none' then return corrupt(LOG, 'not a sorted set (wrong type)') end
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
return ok(1)
