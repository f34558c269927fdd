-- requeue: move one job from the dead-letter list back to ready, its
-- retry count reset.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] dead list      queue:dlq:{q}
-- KEYS[7] wake list      queue:{q}:executions
-- ARGV[1] job ID
-- ARGV[2] wake list TTL in ms
-- Returns 1 when requeued, 0 when the ID is not in the dead-letter list,
-- -1 when a live job already has the ID (the entry stays), -2 when the
-- entry is malformed.
local id = ARGV[1]
local prefix = '{"id":' .. cjson.encode(id) .. ','
local lvkeys = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]}
for _, e in ipairs(redis.call('LRANGE', KEYS[6], 0, -1)) do
  if string.sub(e, 1, #prefix) == prefix then
    if redis.call('HEXISTS', KEYS[1], id) == 1 then
      return -1
    end
    local max, lvl = string.match(e, '"max_retries":(%d+),"level":"(%a+)","job":')
    local at = string.find(e, ',"job":', 1, true)
    if not max or not at or lvkeys[lvl] == nil then
      return -2
    end
    local body = string.sub(e, at + 7, -2)
    if body == 'null' then
      return -2
    end
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call('LREM', KEYS[6], 1, e)
    redis.call('HSET', KEYS[1], id, body)
    redis.call('HSET', KEYS[2], id, '0,0,' .. max .. ',' .. lvl .. ',')
    redis.call('ZADD', lvkeys[lvl], now * 1000, id)
    if redis.call('LLEN', KEYS[7]) == 0 then
      redis.call('RPUSH', KEYS[7], '1')
      redis.call('PEXPIRE', KEYS[7], ARGV[2])
    end
    return 1
  end
end
return 0
