-- rollup drain: take or renew the metric's rollup lease, close the last
-- complete minute (moving what the flushes added since the last drain
-- into the minute stream and the open hour and day buckets), close the
-- hour and day buckets that ended, trim each tier to its retention (never
-- below what the sink has not taken), and return what the sink has not
-- taken yet.
-- KEYS[1] pending  metrics:rollup:{metric_name}:pending
-- KEYS[2] state    metrics:rollup:{metric_name}:state
-- KEYS[3] open     metrics:rollup:{metric_name}:open
-- KEYS[4..6] the minute, hour and day streams
-- ARGV[1] owner (the rollup instance's ID)
-- ARGV[2] lease, ms
-- ARGV[3..5] retention of the minute, hour and day tiers, ms
-- ARGV[6] most entries returned per tier
-- Returns {'ok', minute entries, hour entries, day entries} as XRANGE gives
-- them (a bucket starting at s is the entries s-0, s-1, ...), {'conflict'} when another owner holds the lease, {'corrupt', i, why}.
-- A resent drain finds its minute closed and only returns the entries.
-- Everything read is checked before the first write (the lease): key
-- types, closed:minute, the open buckets' sums, and the last entry ID of
-- every stream this drain appends to (an entry at or after the bucket's
-- ID would make XADD fail midway), so a {'corrupt', ...} reply writes
-- nothing.
local now = now_ms()
local function hget(f)
  local r = redis.pcall('HGET', KEYS[2], f)
  if type(r) == 'table' then return nil, true end
  return r, false
end
local holder, bad = hget('lease')
if bad then return {'corrupt', 2, 'rollup state is not a hash'} end
local exp = to_int(hget('lease_exp') or '0', 0)
if not exp then return {'corrupt', 2, 'lease expiry is not an integer'} end
if holder and holder ~= ARGV[1] and exp > now then
  return {'conflict'}
end
local tiers = { { 60000, 'minute' }, { 3600000, 'hour' }, { 86400000, 'day' } }
for t = 1, 3 do
  local ty = redis.pcall('TYPE', KEYS[3 + t])
  if ty.ok ~= 'none' and ty.ok ~= 'stream' then return {'corrupt', 3 + t, 'not a stream'} end
end
local pty = redis.pcall('TYPE', KEYS[1])
if pty.ok ~= 'none' and pty.ok ~= 'hash' then return {'corrupt', 1, 'not a hash'} end
local oty = redis.pcall('TYPE', KEYS[3])
if oty.ok ~= 'none' and oty.ok ~= 'hash' then return {'corrupt', 3, 'not a hash'} end

-- last_ms returns the ms part of stream k's last entry ID (-1 when empty).
local function last_ms(k)
  local e = redis.call('XREVRANGE', k, '+', '-', 'COUNT', '1')[1]
  if not e then return -1 end
  return to_int(string.match(e[1], '^(%d+)%-')) or math.huge
end

-- xadd appends fields (name, value, ...) to stream k as the entries
-- s-0, s-1, ... of at most 500 fields each (Lua's stack bounds unpack).
local function xadd(k, s, fields)
  local seq, i = 0, 1
  while i <= #fields do
    local j = math.min(i + 999, #fields)
    redis.call('XADD', k, int_str(s) .. '-' .. seq, unpack(fields, i, j))
    seq = seq + 1
    i = j + 1
  end
end

-- close a bucket of tier t (2 hour, 3 day) that started at s: its open
-- fields "tier|field" (in r, the open hash as read) become one stream
-- entry with ID s.
local function close_open(t, s, r)
  local name = tiers[t][2]
  local fields, gone = {}, {}
  local pre = name .. '|'
  for j = 1, #r, 2 do
    if string.sub(r[j], 1, #pre) == pre then
      fields[#fields + 1] = string.sub(r[j], #pre + 1)
      fields[#fields + 1] = r[j + 1]
      gone[#gone + 1] = r[j]
    end
  end
  if #fields > 0 then
    xadd(KEYS[3 + t], s, fields)
    batched('HDEL', KEYS[3], gone)
  end
end

local m = math.floor(now / 60000) * 60000 - 60000
local closed = to_int(hget('closed:minute') or '0', 0)
if not closed then return {'corrupt', 2, 'closed minute is not an integer'} end
local r, open_r, starts, closing
if m > closed then
  -- Checks before the first write: the open sums must parse, or
  -- HINCRBYFLOAT fails midway; each stream appended to must end before
  -- the new entry's ID, or XADD does (three XREVRANGE at most, once a
  -- minute).
  r = redis.call('HGETALL', KEYS[1])
  open_r = redis.call('HGETALL', KEYS[3])
  for j = 2, #open_r, 2 do
    if not to_num(open_r[j]) then return {'corrupt', 3, 'open sum ' .. open_r[j - 1] .. ' is not a number'} end
  end
  starts, closing = {}, {}
  for t = 2, 3 do
    local size = tiers[t][1]
    starts[t] = math.floor(m / size) * size
    local open = to_int(hget('open:' .. tiers[t][2]) or '-1', -1)
    if open and open >= 0 and open < starts[t] then
      closing[t] = open
      if last_ms(KEYS[3 + t]) >= open then return {'corrupt', 3 + t, 'entry at or after the bucket to close'} end
    end
  end
  if #r > 0 and last_ms(KEYS[4]) >= m then return {'corrupt', 4, 'entry at or after the minute to close'} end
end

-- The first write: take or renew the lease.
redis.call('HSET', KEYS[2], 'lease', ARGV[1], 'lease_exp', int_str(now + tonumber(ARGV[2])))
if m > closed then
  for t = 2, 3 do
    if closing[t] then close_open(t, closing[t], open_r) end
    redis.call('HSET', KEYS[2], 'open:' .. tiers[t][2], int_str(starts[t]))
  end
  if #r > 0 then
    local fields = {}
    for j = 1, #r, 2 do
      local v = to_num(r[j + 1])
      if v then
        fields[#fields + 1] = r[j]
        fields[#fields + 1] = r[j + 1]
        redis.call('HINCRBYFLOAT', KEYS[3], 'hour|' .. r[j], r[j + 1])
        redis.call('HINCRBYFLOAT', KEYS[3], 'day|' .. r[j], r[j + 1])
      end
    end
    if #fields > 0 then
      xadd(KEYS[4], m, fields)
    end
    redis.call('DEL', KEYS[1])
  end
  redis.call('HSET', KEYS[2], 'closed:minute', int_str(m))
end

local out = {}
local keep = 90 * 86400000
for t = 1, 3 do
  local k, size, name = KEYS[3 + t], tiers[t][1], tiers[t][2]
  local ret = tonumber(ARGV[2 + t])
  keep = math.max(keep, ret)
  local wm = to_int(hget('sink:' .. name) or '-1', -1) or -1
  local cut = math.min(now - ret, wm + 1)
  if cut > 0 then
    redis.call('XTRIM', k, 'MINID', int_str(cut) .. '-0')
  end
  redis.call('XTRIM', k, 'MAXLEN', int_str(2 * math.ceil(ret / size) + 2))
  if redis.call('EXISTS', k) == 1 then
    redis.call('PEXPIRE', k, int_str(math.max(ret, 2 * size)))
  end
  out[t] = redis.call('XRANGE', k, int_str(wm + 1) .. '-0', '+', 'COUNT', ARGV[6])
end
redis.call('PEXPIRE', KEYS[2], int_str(keep))
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('PEXPIRE', KEYS[3], int_str(keep))
end
return {'ok', out[1], out[2], out[3]}
