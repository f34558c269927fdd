-- delete: remove one job, whatever its state. A worker holding it gets
-- a lost lease on its next ack, fail or extend.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] active zset    queue:{q}:active
-- KEYS[7] dead list      queue:dlq:{q}
-- ARGV[1] job ID
-- Returns 1 when a job was removed, 0 when there was none.
local id = ARGV[1]
local n = redis.call('HDEL', KEYS[1], id) + redis.call('HDEL', KEYS[2], id)
for i = 3, 6 do
  n = n + redis.call('ZREM', KEYS[i], id)
end
if n > 0 then
  return 1
end
local prefix = '{"id":' .. cjson.encode(id) .. ','
for _, e in ipairs(redis.call('LRANGE', KEYS[7], 0, -1)) do
  if string.sub(e, 1, #prefix) == prefix then
    redis.call('LREM', KEYS[7], 1, e)
    return 1
  end
end
return 0
