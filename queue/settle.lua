-- settle: finish leased jobs in one batch: ack, fail (retry or dead
-- letter), release (back to ready, no attempt counted) or extend.
--
-- KEYS[1] jobs hash      queue:{q}:jobs
-- KEYS[2] state hash     queue:{q}:state
-- KEYS[3] high zset      queue:{q}:priority:high
-- KEYS[4] normal zset    queue:{q}:priority:normal
-- KEYS[5] low zset       queue:{q}:priority:low
-- KEYS[6] active zset    queue:{q}:active
-- KEYS[7] stats hash     queue:stats:{q}
-- KEYS[8] dead list      queue:dlq:{q}
-- KEYS[9] wake list      queue:{q}:executions
-- ARGV[1] dead-letter cap
-- ARGV[2] dead-letter TTL in ms
-- ARGV[3] wake list TTL in ms
-- ARGV[4..] groups of 5: op (a|f|d|r|e), id, delivery, number, error
--   a: number = processing time in microseconds
--   f: number = retry delay in ms; error = the failure text
--   d: like f, but straight to the dead-letter list (the job's JSON does
--      not decode; it is kept as a string under "raw")
--   r: number unused
--   e: number = new lease in ms
-- Returns {r1, ..., rN, now_ms}: one integer per group, 0 when the lease
-- was lost (the job is not in flight under that delivery), 1 when done
-- (acked, scheduled for retry, released, extended), 2 when the job moved to
-- the dead-letter list; then the server time in ms. A dead letter pushed
-- past the cap trims the oldest; total_dead_trimmed counts them.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lvkeys = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]}
local dlqcap = tonumber(ARGV[1])
-- The dead letter's job: the stored JSON, or for 'd' (a job whose JSON
-- does not decode) the raw text as a string, kept out of "job".
local function jobpart(op, body)
  if op == 'd' or not body then
    return '"raw":' .. cjson.encode(body or '') .. ',"job":null'
  end
  return '"job":' .. body
end
local out = {}
local processed, failed, deadn, micros, released, trimmed = 0, 0, 0, 0, 0, 0
local ids = {}
for i = 4, #ARGV, 5 do
  ids[#ids + 1] = ARGV[i + 1]
end
if #ids == 0 then
  return {now}
end
-- one read of every state and lease, batched writes below
local sts = redis.call('HMGET', KEYS[2], unpack(ids))
local leases = redis.call('ZMSCORE', KEYS[6], unpack(ids))
local unlease, forget, extend, seen = {}, {}, {}, {}

for k = 1, #ids do
  local i = 4 + (k - 1) * 5
  local op, id, dlv, num, err = ARGV[i], ids[k], ARGV[i + 2], tonumber(ARGV[i + 3]), ARGV[i + 4]
  local st = sts[k]
  local sdlv, retry, max, lvl
  if st then
    sdlv, retry, max, lvl = string.match(st, '^(%d+),(%d+),(%-?%d+),(%a+),')
  end
  if not st or sdlv ~= dlv or not leases[k] or lvkeys[lvl] == nil or (seen[id] and op ~= 'e') then
    out[#out + 1] = 0
  elseif op == 'e' then
    extend[#extend + 1] = now + num
    extend[#extend + 1] = id
    out[#out + 1] = 1
  else
    seen[id] = true
    unlease[#unlease + 1] = id
    if op == 'a' then
      forget[#forget + 1] = id
      processed = processed + 1
      micros = micros + num
      out[#out + 1] = 1
    elseif op == 'r' then
      redis.call('ZADD', lvkeys[lvl], now * 1000, id)
      released = released + 1
      out[#out + 1] = 1
    else
      retry = tonumber(retry) + 1
      max = tonumber(max)
      failed = failed + 1
      if retry > max or op == 'd' then
        local body = redis.call('HGET', KEYS[1], id)
        forget[#forget + 1] = id
        local len = redis.call('LPUSH', KEYS[8], '{"id":' .. cjson.encode(id) .. ',"error":' .. cjson.encode(err) ..
          ',"failed_at":' .. string.format('%.0f', now) .. ',"retry_count":' .. retry .. ',"max_retries":' .. max ..
          ',"level":"' .. lvl .. '",' .. jobpart(op, body) .. '}')
        if len > dlqcap then
          redis.call('LTRIM', KEYS[8], 0, dlqcap - 1)
          trimmed = trimmed + len - dlqcap
        end
        redis.call('PEXPIRE', KEYS[8], ARGV[2])
        deadn = deadn + 1
        out[#out + 1] = 2
      else
        redis.call('HSET', KEYS[2], id, dlv .. ',' .. retry .. ',' .. max .. ',' .. lvl .. ',' .. err)
        redis.call('ZADD', lvkeys[lvl], (now + num) * 1000, id)
        if num <= 0 then
          released = released + 1
        end
        out[#out + 1] = 1
      end
    end
  end
end

if #unlease > 0 then
  redis.call('ZREM', KEYS[6], unpack(unlease))
end
if #forget > 0 then
  redis.call('HDEL', KEYS[1], unpack(forget))
  redis.call('HDEL', KEYS[2], unpack(forget))
end
if #extend > 0 then
  redis.call('ZADD', KEYS[6], 'XX', unpack(extend))
end
if processed > 0 then
  local total = redis.call('HINCRBY', KEYS[7], 'total_processed', processed)
  local sum = redis.call('HINCRBY', KEYS[7], 'total_process_time_us', micros)
  redis.call('HSET', KEYS[7], 'avg_process_time_ms', string.format('%.3f', sum / total / 1000),
    'last_processed_at', string.format('%.0f', now))
end
if trimmed > 0 then
  redis.call('HINCRBY', KEYS[7], 'total_dead_trimmed', trimmed)
end
if failed > 0 then
  redis.call('HINCRBY', KEYS[7], 'total_failed', failed)
end
if deadn > 0 then
  redis.call('HINCRBY', KEYS[7], 'total_dead', deadn)
end
if released > 0 and redis.call('LLEN', KEYS[9]) == 0 then
  redis.call('RPUSH', KEYS[9], '1')
  redis.call('PEXPIRE', KEYS[9], ARGV[3])
end
out[#out + 1] = now
return out
