-- delete: remove jobs, whatever their state. A worker holding one gets a
-- lost lease on its next ack, fail or extend. A resent request reports
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
-- KEYS[12] errors hash   queue:{q}:errors
-- KEYS[13] progress hash queue:{q}:progress
-- ARGV[1] reply memo TTL in ms
-- ARGV[2] dead-letter cap, ARGV[3] dead-letter TTL in ms (a flow's parent
--         dead-lettered)
-- ARGV[4..] job IDs (at most 500)
-- Returns {'ok', n}, n the jobs removed (a live job, else its newest
-- dead letter). Flows: a deleted parent's entry goes (its children run
-- on); a deleted child counts as a dead one (its parent is dead-lettered
-- or counts it, as its flow says).
local memo = replayed(KEYS[8])
if memo then
  return memo
elseif memo == false then
  return {'corrupt', 8, 'reply memo is not a reply'}
end
typecheck({{'HLEN', 1}, {'HLEN', 2}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'ZCARD', 6}, {'LLEN', 7}, {'HLEN', 9}, {'HLEN', 12}, {'HLEN', 13}})
local ids, seen = {}, {}
for i = 4, #ARGV do
  if not seen[ARGV[i]] then
    seen[ARGV[i]] = true
    ids[#ids + 1] = ARGV[i]
  end
end
-- a deleted child may dead-letter its parent: check what that writes
-- before anything is written
if redis.call('EXISTS', KEYS[9]) == 1 then
  local bad = stats_bad(KEYS[10], {'total_dead', 'total_dead_trimmed'})
  if bad then
    return {'corrupt', 10, bad}
  end
  typecheck({{'LLEN', 11}})
end
local n, gone, kinds, missing = 0, {}, {}, {}
for _, id in ipairs(ids) do
  local m = redis.call('HDEL', KEYS[1], id) + redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[12], id)
  redis.call('HDEL', KEYS[13], id)
  for i = 3, 6 do
    m = m + redis.call('ZREM', KEYS[i], id)
  end
  if m > 0 then
    n = n + 1
    redis.call('HDEL', KEYS[9], 'p:' .. id)
    gone[#gone + 1] = id
    kinds[#kinds + 1] = 'dead'
  else
    missing[#missing + 1] = id
  end
end
local plan = flow_plan(KEYS[9], gone, kinds)
if plan then
  local now = math.floor(now_us() / 1000)
  local d, tr = flow_apply(plan, KEYS[9], {jobs = KEYS[1], state = KEYS[2], levels = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]},
    dlq = KEYS[7], wake = KEYS[11]}, now, tonumber(ARGV[2]), ARGV[3])
  add_counts(KEYS[10], {'total_dead', d, 'total_dead_trimmed', tr})
end
if #missing > 0 then
  local found = dead_index(KEYS[7], missing)
  for _, id in ipairs(missing) do
    if found[id] then
      redis.call('LREM', KEYS[7], '1', found[id])
      found[id] = nil
      n = n + 1
    end
  end
end
return remember(KEYS[8], {'ok', n}, ARGV[1])
