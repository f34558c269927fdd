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
-- KEYS[9] flows hash     queue:{q}:flows
-- KEYS[10] stats hash    queue:stats:{q}
-- KEYS[11] wake list     queue:{q}:executions
-- ARGV[1] job ID
-- ARGV[2] reply memo TTL in ms
-- ARGV[3] dead-letter cap, ARGV[4] dead-letter TTL in ms (a flow's parent
--         dead-lettered)
-- Returns {'ok'} when a job was removed, {'none'} when there was none.
-- Flows: a deleted parent's entry goes (its children run on); a deleted
-- child counts as a dead one (its parent is dead-lettered or counts it,
-- as its flow says).
local memo = replayed(KEYS[8])
if memo then
  return memo
elseif memo == false then
  return {'corrupt', 8, 'reply memo is not a reply'}
end
typecheck({{'HLEN', 1}, {'HLEN', 2}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'ZCARD', 6}, {'LLEN', 7}, {'HLEN', 9}})
local id = ARGV[1]
local plan = flow_plan(KEYS[9], {id}, {'dead'})
if plan then
  local bad = stats_bad(KEYS[10], {'total_dead', 'total_dead_trimmed'})
  if bad then
    return {'corrupt', 10, bad}
  end
  typecheck({{'LLEN', 11}})
end
local n = redis.call('HDEL', KEYS[1], id) + redis.call('HDEL', KEYS[2], id)
for i = 3, 6 do
  n = n + redis.call('ZREM', KEYS[i], id)
end
if n > 0 then
  redis.call('HDEL', KEYS[9], 'p:' .. id)
  if plan then
    local now = math.floor(now_us() / 1000)
    local d, tr = flow_apply(plan, KEYS[9], {jobs = KEYS[1], state = KEYS[2], levels = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]},
      dlq = KEYS[7], wake = KEYS[11]}, now, tonumber(ARGV[3]), ARGV[4])
    add_counts(KEYS[10], {'total_dead', d, 'total_dead_trimmed', tr})
  end
end
if n == 0 then
  local e = find_dead(KEYS[7], id)
  if not e then
    return remember(KEYS[8], {'none'}, ARGV[2])
  end
  redis.call('LREM', KEYS[7], '1', e)
end
return remember(KEYS[8], {'ok'}, ARGV[2])
