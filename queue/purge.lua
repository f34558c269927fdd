-- purge: delete up to limit jobs in one state.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] active zset    queue:{q}:active
-- KEYS[7] dead list      queue:dlq:{q}
-- KEYS[8] reply memo     queue:{q}:reply:{request_id}
-- KEYS[9] flows hash     queue:{q}:flows
-- KEYS[10] errors hash   queue:{q}:errors
-- KEYS[11] progress hash queue:{q}:progress
-- ARGV[1] state: pending | scheduled | active | dead
-- ARGV[2] limit (1 to 10,000)
-- ARGV[3] reply memo TTL in ms
-- Returns {'ok', n}, n the number of jobs deleted. Pending and scheduled go by
-- priority (high first) and age; active by lease deadline; dead oldest
-- first. Every variadic command is batched: limit may be 10,000. A resent
-- request reports its first outcome (and deletes nothing more). A purged
-- flow child takes its waiting parent with it (counted in n); a purged
-- job's flow entries go.
local memo = replayed(KEYS[8])
if memo then
  return memo
elseif memo == false then
  return {'corrupt', 8, 'reply memo is not a reply'}
end
typecheck({{'HLEN', 1}, {'HLEN', 2}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'ZCARD', 6}, {'LLEN', 7}, {'HLEN', 9}, {'HLEN', 10}, {'HLEN', 11}})
local what, limit = ARGV[1], tonumber(ARGV[2])
local n = 0
if what == 'dead' then
  local len = redis.call('LLEN', KEYS[7])
  n = math.min(len, limit)
  if n == len then
    redis.call('DEL', KEYS[7])
  elseif n > 0 then
    redis.call('LTRIM', KEYS[7], '0', len - n - 1)
  end
  return remember(KEYS[8], {'ok', n}, ARGV[3])
end
local flows = redis.call('EXISTS', KEYS[9]) == 1
local function forget(ids)
  batched('HDEL', KEYS[1], ids)
  batched('HDEL', KEYS[2], ids)
  batched('HDEL', KEYS[10], ids)
  batched('HDEL', KEYS[11], ids)
  n = n + #ids
  if not flows or #ids == 0 then
    return
  end
  local cf, pf = {}, {}
  for x, id in ipairs(ids) do
    cf[x] = 'c:' .. id
    pf[x] = 'p:' .. id
  end
  local ps = mread('HMGET', KEYS[9], cf)
  local drop, seen = {}, {}
  for x, p in ipairs(ps) do
    if p then
      drop[#drop + 1] = cf[x]
      if not seen[p] then
        seen[p] = true
        if redis.call('HDEL', KEYS[9], 'p:' .. p) == 1 then
          n = n + redis.call('HDEL', KEYS[1], p)
        end
      end
    end
  end
  batched('HDEL', KEYS[9], drop)
  batched('HDEL', KEYS[9], pf)
end
if what == 'active' then
  local ids = redis.call('ZRANGE', KEYS[6], '0', limit - 1)
  batched('ZREM', KEYS[6], ids)
  forget(ids)
  return remember(KEYS[8], {'ok', n}, ARGV[3])
end
local maxscore = now_ms() * 1000 + 999
for i = 3, 5 do
  if n >= limit then
    break
  end
  local ids
  if what == 'pending' then
    ids = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', int_str(maxscore), 'LIMIT', '0', limit - n)
  else
    ids = redis.call('ZRANGEBYSCORE', KEYS[i], '(' .. int_str(maxscore), '+inf', 'LIMIT', '0', limit - n)
  end
  batched('ZREM', KEYS[i], ids)
  forget(ids)
end
return remember(KEYS[8], {'ok', n}, ARGV[3])
