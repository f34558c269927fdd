-- requeue: move one job from the dead-letter list back to ready, its
-- retry count reset. A resent request reports its first outcome.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] dead list      queue:dlq:{q}
-- KEYS[7] wake list      queue:{q}:executions
-- KEYS[8] reply memo     queue:{q}:reply:{request_id}
-- ARGV[1] job ID
-- ARGV[2] reply memo TTL in ms
-- Returns {'ok'} when requeued, {'none'} when the ID is not in the dead-letter
-- list, {'conflict'} when a live job already has the ID (the entry stays),
-- {'corrupt', 6, why} when the entry holds no job to requeue.
local memo = replayed(KEYS[8])
if memo then
  return memo
elseif memo == false then
  return {'corrupt', 8, 'reply memo is not a reply'}
end
typecheck({{'HLEN', 1}, {'HLEN', 2}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'LLEN', 7}})
local id = ARGV[1]
local lvkeys = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]}
local e = find_dead(KEYS[6], id)
if not e then
  return remember(KEYS[8], {'none'}, ARGV[2])
end
if redis.call('HEXISTS', KEYS[1], id) == 1 then
  return remember(KEYS[8], {'conflict'}, ARGV[2])
end
local max, lvl = string.match(e, '"max_retries":(%d+),"level":"(%a+)","job":')
local at = string.find(e, ',"job":', 1, true)
if not to_int(max, 0) or not at or lvkeys[lvl] == nil then
  return {'corrupt', 6, 'malformed dead-letter entry for ' .. id}
end
local body = string.sub(e, at + 7, -2)
if body == 'null' then
  return {'corrupt', 6, 'dead-letter entry for ' .. id .. ' holds no decodable job'}
end
redis.call('LREM', KEYS[6], '1', e)
redis.call('HSET', KEYS[1], id, body)
redis.call('HSET', KEYS[2], id, '0,0,' .. max .. ',' .. lvl .. ',')
redis.call('ZADD', lvkeys[lvl], int_str(now_ms() * 1000), id)
wake(KEYS[7])
return remember(KEYS[8], {'ok'}, ARGV[2])
