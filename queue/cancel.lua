-- cancel: stop one job. A job in flight gets a flag in the cancel hash
-- and its ID is published on the queue's sharded channel, so the worker
-- running it cancels its handler's context at once (workers that missed
-- the message see the flag when they next extend the lease); the job
-- leaves the queue when its handler returns. A pending or scheduled job
-- leaves the queue now. A resent request reports its first outcome.
--
-- KEYS[1]  jobs hash      queue:{q}:jobs
-- KEYS[2]  state hash     queue:{q}:state
-- KEYS[3]  high zset      queue:{q}:priority:high
-- KEYS[4]  normal zset    queue:{q}:priority:normal
-- KEYS[5]  low zset       queue:{q}:priority:low
-- KEYS[6]  active zset    queue:{q}:active
-- KEYS[7]  stats hash     queue:stats:{q}
-- KEYS[8]  cancel hash    queue:{q}:cancel
-- KEYS[9]  done hash      queue:{q}:done
-- KEYS[10] done index     queue:{q}:done_at
-- KEYS[11] reply memo     queue:{q}:reply:{request_id}
-- ARGV[1] job ID
-- ARGV[2] the queue's cancel channel (SPUBLISH; a server without sharded
--         pub/sub leaves workers to poll the flag)
-- ARGV[3] reply memo TTL in ms
-- ARGV[4] retention in ms (0: none), ARGV[5] retention cap
-- KEYS[12] errors hash    queue:{q}:errors
-- KEYS[13] flows hash     queue:{q}:flows
-- KEYS[14] dead list      queue:dlq:{q}
-- KEYS[15] wake list      queue:{q}:executions
-- ARGV[6] events stream length (used with KEYS[16] only)
-- ARGV[7] dead-letter cap, ARGV[8] dead-letter TTL in ms (a flow's parent
--         dead-lettered)
-- KEYS[16] events stream  queue:{q}:events, with WithEvents only
--          (cancelled, for a job removed here)
-- Returns {'ok', state}: 'active' (flagged), 'pending', 'scheduled' or
-- 'waiting' (removed), or {'none'} when no live job has the ID.
--
-- Flows: a removed child counts as a dead one, in the same step as the
-- settle script counts a cancelled child in flight (its parent is
-- dead-lettered, or counts it, as its flow says); a removed waiting
-- parent's entry goes and its children run on, as Delete does.
local memo = replayed(KEYS[11])
if memo then
  return memo
elseif memo == false then
  return {'corrupt', 11, 'reply memo is not a reply'}
end
local id = ARGV[1]
local now = now_ms()
-- flags of jobs no longer in flight (a worker that crashed, a job
-- deleted) are dropped a few at a time, by each Cancel that writes,
-- after its checks
local function drop_stale_flags()
  local some = redis.pcall('HRANDFIELD', KEYS[8], '8')
  if type(some) == 'table' and #some > 0 and not some.err then
    local leases = mread('ZMSCORE', KEYS[6], some)
    local gone = {}
    for x = 1, #some do
      if not leases[x] and some[x] ~= id then
        gone[#gone + 1] = some[x]
      end
    end
    batched('HDEL', KEYS[8], gone)
  end
end
if redis.call('ZSCORE', KEYS[6], id) then
  typecheck({{'HLEN', 8}})
  drop_stale_flags()
  redis.call('HSET', KEYS[8], id, int_str(now))
  redis.pcall('SPUBLISH', ARGV[2], id)
  return remember(KEYS[11], {'ok', 'active'}, ARGV[3])
end
local maxscore = now * 1000 + 999
local state, level
for i = 3, 5 do
  local s = redis.call('ZSCORE', KEYS[i], id)
  if s then
    state, level = tonumber(s) <= maxscore and 'pending' or 'scheduled', i
    break
  end
end
local flows = redis.call('EXISTS', KEYS[13]) == 1
if not state and flows and redis.call('HEXISTS', KEYS[13], 'p:' .. id) == 1 and redis.call('HEXISTS', KEYS[1], id) == 1 then
  state = 'waiting'
end
if not state then
  return remember(KEYS[11], {'none'}, ARGV[3])
end
-- reads first: the types of what is written (every level: a flow's
-- parent may be made ready into another), the counters; a child's flow
-- (flow_plan writes nothing)
typecheck({{'HLEN', 1}, {'HLEN', 2}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'HLEN', 12}, {'XLEN', 16}})
local retention = tonumber(ARGV[4])
if retention > 0 then
  typecheck({{'HLEN', 9}, {'ZCARD', 10}})
end
local bad = stats_bad(KEYS[7], {'total_cancelled', 'total_dead', 'total_dead_trimmed'})
if bad then
  return {'corrupt', 7, bad}
end
local plan
if flows then
  typecheck({{'LLEN', 14}, {'LLEN', 15}})
  plan = flow_plan(KEYS[13], {id}, {'dead'})
end
local body = redis.call('HGET', KEYS[1], id)
local dlv, retry = parse_state(redis.call('HGET', KEYS[2], id))
drop_stale_flags()
if retention > 0 then
  keep_done(KEYS[9], KEYS[10], {id, done_entry(id, 'cancelled', nil, retry or 0, dlv or 0, nil, body, now)}, now, retention,
    tonumber(ARGV[5]))
end
if level then
  redis.call('ZREM', KEYS[level], id)
end
redis.call('HDEL', KEYS[1], id)
redis.call('HDEL', KEYS[2], id)
redis.call('HDEL', KEYS[12], id)
redis.call('HINCRBY', KEYS[7], 'total_cancelled', '1')
emit(KEYS[16], ARGV[6], 'cancelled', id, now, dlv, retry)
if flows then
  redis.call('HDEL', KEYS[13], 'p:' .. id)
end
if plan then
  local d, tr = flow_apply(plan, KEYS[13], {jobs = KEYS[1], state = KEYS[2], levels = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]},
    dlq = KEYS[14], wake = KEYS[15]}, now, tonumber(ARGV[7]), ARGV[8], KEYS[16], ARGV[6])
  add_counts(KEYS[7], {'total_dead', d, 'total_dead_trimmed', tr})
end
return remember(KEYS[11], {'ok', state}, ARGV[3])
