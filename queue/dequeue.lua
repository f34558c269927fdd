-- dequeue: recover expired leases, then lease up to n ready jobs, highest
-- priority first, FIFO within a priority.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] active zset    queue:{q}:active      id -> lease deadline (ms)
-- KEYS[7] stats hash     queue:stats:{q}
-- KEYS[8] dead list      queue:dlq:{q}
-- KEYS[9] wake list      queue:{q}:executions
-- ARGV[1] n: most jobs to lease
-- ARGV[2] lease in ms
-- ARGV[3] dead-letter cap (entries kept)
-- ARGV[4] dead-letter TTL in ms
-- ARGV[5] wake list TTL in ms
-- Returns {wait, id, delivery, retry, max, level, json, lease_deadline,
-- last_error, ...}:
-- wait is -1 when jobs were leased or nothing is pending, else the ms
-- until the next delayed job or lease deadline is due.
--
-- delivery is the lease token: the stats hash's delivery_seq, one per
-- delivery in the whole queue, so a stale holder (lease recovered, job
-- deleted and re-enqueued under its ID, or requeued from the dead letters)
-- never holds the token of a later delivery. A dead letter pushed past the
-- cap trims the oldest; total_dead_trimmed counts them.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lvkeys = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]}
local dlqcap = tonumber(ARGV[3])

local function dead(id, retry, max, lvl, err)
  local body = redis.call('HGET', KEYS[1], id)
  redis.call('HDEL', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
  if body then
    -- a body that is not JSON is kept as a string under "raw", so one bad
    -- job cannot make the whole dead-letter list unreadable
    local job = '"job":' .. body
    local ok, v = pcall(cjson.decode, body)
    if not ok or type(v) ~= 'table' then
      job = '"raw":' .. cjson.encode(body) .. ',"job":null'
    end
    local len = redis.call('LPUSH', KEYS[8], '{"id":' .. cjson.encode(id) .. ',"error":' .. cjson.encode(err) ..
      ',"failed_at":' .. string.format('%.0f', now) .. ',"retry_count":' .. retry .. ',"max_retries":' .. max ..
      ',"level":"' .. lvl .. '",' .. job .. '}')
    if len > dlqcap then
      redis.call('LTRIM', KEYS[8], 0, dlqcap - 1)
      redis.call('HINCRBY', KEYS[7], 'total_dead_trimmed', len - dlqcap)
    end
    redis.call('PEXPIRE', KEYS[8], ARGV[4])
    redis.call('HINCRBY', KEYS[7], 'total_dead', 1)
  end
end

-- 1. expired leases come back (a crashed worker counts as a failed attempt)
local expired = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now, 'LIMIT', 0, 100)
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[6], id)
  local st = redis.call('HGET', KEYS[2], id)
  if st then
    local dlv, retry, max, lvl = string.match(st, '^(%d+),(%d+),(%-?%d+),(%a+),')
    redis.call('HINCRBY', KEYS[7], 'total_failed', 1)
    if not dlv or lvkeys[lvl] == nil then
      dead(id, 0, 0, 'normal', 'corrupt job state')
    elseif tonumber(retry) + 1 > tonumber(max) then
      dead(id, tonumber(retry) + 1, max, lvl, 'lease expired')
    else
      redis.call('HSET', KEYS[2], id, dlv .. ',' .. (tonumber(retry) + 1) .. ',' .. max .. ',' .. lvl .. ',lease expired')
      redis.call('ZADD', lvkeys[lvl], now * 1000, id)
    end
  else
    redis.call('HDEL', KEYS[1], id)
  end
end

-- 2. lease ready jobs. The ready jobs of a level are the lowest scores, so
-- the first k of ZRANGEBYSCORE are ranks 0..k-1; every write is batched.
local n = tonumber(ARGV[1])
local deadline = now + tonumber(ARGV[2])
local out = {-1}
local taken = 0
local maxscore = now * 1000 + 999
for i = 3, 5 do
  if taken >= n then
    break
  end
  local ids = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', maxscore, 'LIMIT', 0, n - taken)
  if #ids > 0 then
    redis.call('ZREMRANGEBYRANK', KEYS[i], 0, #ids - 1)
    local sts = redis.call('HMGET', KEYS[2], unpack(ids))
    local bodies = redis.call('HMGET', KEYS[1], unpack(ids))
    local hset, zadd, orphans = {}, {}, {}
    local seq = redis.call('HINCRBY', KEYS[7], 'delivery_seq', #ids) - #ids
    for j, id in ipairs(ids) do
      local st, body = sts[j], bodies[j]
      local dlv, rest
      if st then
        dlv, rest = string.match(st, '^(%d+),(.*)$')
      end
      local retry, max, lvl, lasterr
      if rest then
        retry, max, lvl, lasterr = string.match(rest, '^(%d+),(%-?%d+),(%a+),(.*)$')
      end
      if body and lvl then
        seq = seq + 1
        dlv = string.format('%d', seq)
        hset[#hset + 1] = id
        hset[#hset + 1] = dlv .. ',' .. rest
        zadd[#zadd + 1] = deadline
        zadd[#zadd + 1] = id
        out[#out + 1] = id
        out[#out + 1] = seq
        out[#out + 1] = tonumber(retry)
        out[#out + 1] = tonumber(max)
        out[#out + 1] = lvl
        out[#out + 1] = body
        out[#out + 1] = deadline
        out[#out + 1] = lasterr
        taken = taken + 1
      elseif body then
        -- state that does not parse: dead-letter the job with the reason
        dead(id, 0, 0, ({'high', 'normal', 'low'})[i - 2], 'corrupt job state')
      else
        -- a state without its job (cannot happen through this package)
        orphans[#orphans + 1] = id
      end
    end
    if #hset > 0 then
      redis.call('HSET', KEYS[2], unpack(hset))
      redis.call('ZADD', KEYS[6], unpack(zadd))
    end
    if #orphans > 0 then
      redis.call('HDEL', KEYS[1], unpack(orphans))
      redis.call('HDEL', KEYS[2], unpack(orphans))
    end
  end
end

if taken > 0 then
  if taken >= n and redis.call('LLEN', KEYS[9]) == 0 then
    -- more may be ready: wake another consumer
    redis.call('RPUSH', KEYS[9], '1')
    redis.call('PEXPIRE', KEYS[9], ARGV[5])
  end
  return out
end

-- 3. idle: how long until something is due?
local due = -1
for i = 3, 6 do
  local first = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
  if first[2] then
    local at = tonumber(first[2])
    if i < 6 then
      at = math.floor(at / 1000)
    end
    if due < 0 or at < due then
      due = at
    end
  end
end
if due >= 0 then
  due = due - now
  if due < 0 then
    due = 0
  end
end
out[1] = due
return out
