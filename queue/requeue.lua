-- requeue: move dead letters back to ready, their retry counts reset:
-- the entries of the given IDs, or the oldest ones. A resent request
-- reports its first outcome.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] dead list      queue:dlq:{q}
-- KEYS[7] wake list      queue:{q}:executions
-- KEYS[8] reply memo     queue:{q}:reply:{request_id}
-- ARGV[1] reply memo TTL in ms
-- ARGV[2] "ids": requeue the entries of ARGV[4..] (job IDs, at most 500);
--         "all": requeue up to ARGV[3] entries, oldest first, skipping
--         (and leaving) those that cannot be requeued
-- ARGV[3] limit ("all" only; 1 to 10,000)
-- Returns {'ok', requeued, conflicts, corrupt}: conflicts are entries
-- whose ID a live job has taken, corrupt entries holding no job to
-- requeue; both stay in the list. With one ID: {'none'} when it is not in
-- the dead-letter list, {'conflict'} when a live job has it, {'corrupt',
-- 6, why} when its entry holds no job.
local memo = replayed(KEYS[8])
if memo then
  return memo
elseif memo == false then
  return {'corrupt', 8, 'reply memo is not a reply'}
end
typecheck({{'HLEN', 1}, {'HLEN', 2}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'LLEN', 7}, {'LLEN', 6}})
local lvkeys = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]}
local now = int_str(now_ms() * 1000)
local requeued, conflicts, corrupt = 0, 0, 0
local why = nil
-- one moves entry e (of id) back to ready: 'ok', 'conflict' or 'corrupt'
local function one(id, e)
  if redis.call('HEXISTS', KEYS[1], id) == 1 then
    conflicts = conflicts + 1
    return 'conflict'
  end
  local max, lvl = string.match(e, '"max_retries":(%d+),"level":"(%a+)","job":')
  local at = string.find(e, ',"job":', 1, true)
  local body = at and string.sub(e, at + 7, -2)
  if not to_int(max, 0) or not at or lvkeys[lvl] == nil or body == 'null' then
    corrupt = corrupt + 1
    why = 'dead-letter entry for ' .. id .. ' holds no decodable job'
    return 'corrupt'
  end
  redis.call('LREM', KEYS[6], '-1', e)
  redis.call('HSET', KEYS[1], id, body)
  redis.call('HSET', KEYS[2], id, '0,0,' .. max .. ',' .. lvl .. ',')
  redis.call('ZADD', lvkeys[lvl], now, id)
  requeued = requeued + 1
  return 'ok'
end
if ARGV[2] == 'ids' then
  local ids = {}
  for i = 4, #ARGV do
    ids[#ids + 1] = ARGV[i]
  end
  local found = dead_index(KEYS[6], ids)
  local seen = {}
  for _, id in ipairs(ids) do
    if found[id] and not seen[id] then
      seen[id] = true
      one(id, found[id])
    end
  end
  if #ids == 1 and requeued == 0 then
    if not found[ids[1]] then
      return remember(KEYS[8], {'none'}, ARGV[1])
    elseif conflicts > 0 then
      return remember(KEYS[8], {'conflict'}, ARGV[1])
    end
    return {'corrupt', 6, why}
  end
else
  local limit = tonumber(ARGV[3])
  -- the tail holds the oldest entries; skipped ones stay at the tail
  local skipped = 0
  while requeued < limit do
    local chunk = redis.call('LRANGE', KEYS[6], -(skipped + 100), -(skipped + 1))
    if #chunk == 0 then
      break
    end
    for j = #chunk, 1, -1 do
      if requeued >= limit then
        break
      end
      local e = chunk[j]
      local id = string.match(e, '^{"id":"([^"\\]*)",')
      if not id then
        local good, v = pcall(cjson.decode, e)
        id = good and type(v) == 'table' and type(v.id) == 'string' and v.id
      end
      if not id or one(id, e) ~= 'ok' then
        if not id then
          corrupt = corrupt + 1
        end
        skipped = skipped + 1
      end
    end
    if #chunk < 100 then
      break
    end
  end
end
if requeued > 0 then
  wake(KEYS[7])
end
return remember(KEYS[8], {'ok', requeued, conflicts, corrupt}, ARGV[1])
