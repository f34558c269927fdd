-- purge: delete up to limit jobs in one state.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] active zset    queue:{q}:active
-- KEYS[7] dead list      queue:dlq:{q}
-- ARGV[1] state: pending | scheduled | active | dead
-- ARGV[2] limit
-- Returns the number of jobs deleted. Pending and scheduled go by priority
-- (high first) and age; active by lease deadline; dead oldest first.
local what, limit = ARGV[1], tonumber(ARGV[2])
local n = 0
if what == 'dead' then
  local len = redis.call('LLEN', KEYS[7])
  n = math.min(len, limit)
  if n == len then
    redis.call('DEL', KEYS[7])
  elseif n > 0 then
    redis.call('LTRIM', KEYS[7], 0, len - n - 1)
  end
  return n
end
local function forget(ids)
  if #ids > 0 then
    redis.call('HDEL', KEYS[1], unpack(ids))
    redis.call('HDEL', KEYS[2], unpack(ids))
  end
  n = n + #ids
end
if what == 'active' then
  local ids = redis.call('ZRANGE', KEYS[6], 0, limit - 1)
  if #ids > 0 then
    redis.call('ZREM', KEYS[6], unpack(ids))
  end
  forget(ids)
  return n
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local maxscore = now * 1000 + 999
for i = 3, 5 do
  if n >= limit then
    break
  end
  local ids
  if what == 'pending' then
    ids = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', maxscore, 'LIMIT', 0, limit - n)
  else
    ids = redis.call('ZRANGEBYSCORE', KEYS[i], '(' .. string.format('%.0f', maxscore), '+inf', 'LIMIT', 0, limit - n)
  end
  if #ids > 0 then
    redis.call('ZREM', KEYS[i], unpack(ids))
  end
  forget(ids)
end
return n
