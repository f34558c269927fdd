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
-- KEYS[13] and ARGV[6]: the events stream and its length, with WithEvents
--          only (cancelled, for a job removed here)
-- Returns {'ok', state}: 'active' (flagged), 'pending' or 'scheduled'
-- (removed), or {'none'} when no live job has the ID.
local memo = replayed(KEYS[11])
if memo then
  return memo
elseif memo == false then
  return {'corrupt', 11, 'reply memo is not a reply'}
end
local id = ARGV[1]
local now = now_ms()
-- flags of jobs no longer in flight (a worker that crashed, a job
-- deleted) are dropped here, a few at a time
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
if redis.call('ZSCORE', KEYS[6], id) then
  redis.call('HSET', KEYS[8], id, int_str(now))
  redis.pcall('SPUBLISH', ARGV[2], id)
  return remember(KEYS[11], {'ok', 'active'}, ARGV[3])
end
local maxscore = now * 1000 + 999
for i = 3, 5 do
  local s = redis.call('ZSCORE', KEYS[i], id)
  if s then
    local state = tonumber(s) <= maxscore and 'pending' or 'scheduled'
    typecheck({{'HLEN', 12}})
    local body = redis.call('HGET', KEYS[1], id)
    local dlv, retry = parse_state(redis.call('HGET', KEYS[2], id))
    local retention = tonumber(ARGV[4])
    if retention > 0 then
      keep_done(KEYS[9], KEYS[10], {id, done_entry(id, 'cancelled', nil, retry or 0, dlv or 0, nil, body, now)}, now, retention,
        tonumber(ARGV[5]))
    end
    redis.call('ZREM', KEYS[i], id)
    redis.call('HDEL', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
    redis.call('HDEL', KEYS[12], id)
    redis.call('HINCRBY', KEYS[7], 'total_cancelled', '1')
    emit(KEYS[13], ARGV[6], 'cancelled', id, now, dlv, retry)
    return remember(KEYS[11], {'ok', state}, ARGV[3])
  end
end
return remember(KEYS[11], {'none'}, ARGV[3])
