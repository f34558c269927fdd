-- delete: remove one job, whatever its state. A worker holding it gets
-- a lost lease on its next ack, fail or extend. A resent request reports
-- its first outcome.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] active zset    queue:{q}:active
-- KEYS[7] dead list      queue:dlq:{q}
-- KEYS[8] reply memo     queue:{q}:reply:{request_id}
-- ARGV[1] job ID
-- ARGV[2] reply memo TTL in ms
-- Returns ok() when a job was removed, none() when there was none.
local memo = replayed(KEYS[8])
if memo then
  return memo
elseif memo == false then
  return corrupt(8, 'reply memo is not a reply')
end
typecheck({{'HLEN', 1}, {'HLEN', 2}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'ZCARD', 6}, {'LLEN', 7}})
local id = ARGV[1]
local n = redis.call('HDEL', KEYS[1], id) + redis.call('HDEL', KEYS[2], id)
for i = 3, 6 do
  n = n + redis.call('ZREM', KEYS[i], id)
end
if n == 0 then
  local e = find_dead(KEYS[7], id)
  if not e then
    return remember(KEYS[8], none(), ARGV[2])
  end
  redis.call('LREM', KEYS[7], 1, e)
end
return remember(KEYS[8], ok(), ARGV[2])
