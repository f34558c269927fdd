-- settle: finish leased jobs in one batch: ack, fail (retry or dead
-- letter), release (back to ready, no attempt counted) or extend. A
-- resent request reports its first run's results.
--
-- KEYS[1]  jobs hash      queue:{q}:jobs
-- KEYS[2]  state hash     queue:{q}:state
-- KEYS[3]  high zset      queue:{q}:priority:high
-- KEYS[4]  normal zset    queue:{q}:priority:normal
-- KEYS[5]  low zset       queue:{q}:priority:low
-- KEYS[6]  active zset    queue:{q}:active
-- KEYS[7]  stats hash     queue:stats:{q}
-- KEYS[8]  dead list      queue:dlq:{q}
-- KEYS[9]  wake list      queue:{q}:executions
-- KEYS[10] progress hash  queue:{q}:progress    id -> delivery,progress JSON
-- KEYS[11] done hash      queue:{q}:done        id -> finished job JSON
-- KEYS[12] done index     queue:{q}:done_at     id -> entry expiry (ms)
-- KEYS[13] cancel hash    queue:{q}:cancel      id -> time of a Cancel
-- KEYS[14] reply memo     queue:{q}:reply:{request_id}
-- KEYS[15] flows hash     queue:{q}:flows       flow parents and children
-- KEYS[16] day prefix     queue:{q}:daily: (the day's counts are this
--          prefix and the server's UTC day, yyyy-mm-dd)
-- KEYS[17] errors hash    queue:{q}:errors      id -> last attempt errors
-- KEYS[18] events stream  queue:{q}:events, with WithEvents only:
--          completed, cancelled, failed then retried or dead
-- ARGV[1] dead-letter cap
-- ARGV[2] dead-letter TTL in ms
-- ARGV[3] reply memo TTL in ms
-- ARGV[4] retention in ms (WithRetention), 0 for none
-- ARGV[5] retention cap (entries kept)
-- ARGV[6] events stream length (WithEvents; "0" for none)
-- ARGV[7..] groups of 5 (at most 512): op (a|c|f|d|r|e), id, delivery,
--   number, error; then, with limits, the group w (see below)
--   a: number = processing time in microseconds; error = the result JSON
--      or "" (kept with the job when retention is on)
--   c: a job whose handler stopped after a Cancel: it leaves the queue
--      like an ack, counted in total_cancelled (kept as "cancelled")
--   f: number = retry delay in ms; error = the failure text
--   d: like f, but straight to the dead-letter list (the job's JSON does
--      not decode; it is kept as a string under "raw")
--   r: number unused
--   e: number = new lease in ms, from the server time rounded up
-- Returns {'ok', now_ms, {r1, ..., rN}}: one result per group, 0 when the
-- lease was lost (the job is not in flight under that delivery), 1 when
-- done (acked, scheduled for retry, released, extended), 2 when the job
-- moved to the dead-letter list; now_ms is the server time rounded up
-- (an extended lease ends at now_ms + lease). {'corrupt', i,
-- why} when a stats field or the memo is not this package's.
-- A batch of acks and extends only (Run's common case) reads first, then
-- records its outcome with one SET NX GET on the memo, which also tells a
-- resend (it returns the first outcome); the stats counts are its first
-- writes, with pcall and a range check, then the jobs hash, with pcall:
-- a failure undoes what was written, memo included. Other batches look
-- for a memo first and check the types and counts of what they write.
-- Every settled delivery's progress field goes (when the progress hash
-- exists: one TYPE per batch); with retention, acked jobs are kept in the
-- done hash, which is trimmed of expired entries and to its cap there.
-- A last group "w" (Go adds it with limits: WithGlobalConcurrency,
-- WithRateLimit, group limits) asks for a wake-up token when a lease
-- ends, so a consumer held back by a limit tries again at once.
local last, wakeup = #ARGV, false
if last >= 11 and ARGV[last - 4] == 'w' then
  last, wakeup = last - 5, true
end
local simple = true
for i = 7, last, 5 do
  if ARGV[i] ~= 'a' and ARGV[i] ~= 'e' then
    simple = false
    break
  end
end
if not simple then
  local memo = replayed(KEYS[14])
  if memo then
    return memo
  elseif memo == false then
    return {'corrupt', 14, 'reply memo is not a reply'}
  end
  local bad = stats_bad(KEYS[7], {'total_processed', 'total_process_time_us', 'total_failed', 'total_dead', 'total_dead_trimmed', 'total_cancelled'})
  if bad then
    return {'corrupt', 7, bad}
  end
  -- A key of the wrong type fails the script before anything is
  -- written. The state hash, the active set and the stats hash are read
  -- above and below before any write; fails and releases also write the
  -- jobs hash, priorities, the dead-letter list and the wake list: their
  -- types are read first. So is the flows hash's, which flow_plan reads
  -- only after the loop below has written.
  typecheck({{'HLEN', 1}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'LLEN', 8}, {'LLEN', 9}, {'HLEN', 17}, {'HLEN', 15}})
  if ARGV[4] ~= '0' then
    typecheck({{'HLEN', 11}, {'ZCARD', 12}})
  end
end
local nowus = now_us()
local now = math.floor(nowus / 1000)
local nowc = math.ceil(nowus / 1000)
local lvkeys = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]}
local dlqcap = tonumber(ARGV[1])
local out = {}
local processed, failed, deadn, micros, released, trimmed, cancelled = 0, 0, 0, 0, 0, 0, 0
local retention = tonumber(ARGV[4])
local evk, evn = KEYS[18], ARGV[6]
typecheck({{'XLEN', 18}}) -- before any write, as the events go last
-- events are written with the other writes (after()), never by a resend
-- that finds its memo
local evs = {}
local function later(kind, id, at, dlv, retry, err)
  if evk then
    evs[#evs + 1] = {kind, id, at, dlv, retry, err}
  end
end
local ids = {}
for i = 7, last, 5 do
  ids[#ids + 1] = ARGV[i + 1]
end
-- one read of every state and lease, batched writes below
local sts = mread('HMGET', KEYS[2], ids)
local leases = mread('ZMSCORE', KEYS[6], ids)
local unlease, forget, extend, seen, kept, stale, extended = {}, {}, {}, {}, {}, {}, {}
-- jobs leaving the queue that have attempt errors to delete
local herase = {}
-- jobs that left the queue, for their flows: 'done' (acked) or 'dead'
-- (dead-lettered or cancelled)
local fids, fkinds = {}, {}
local function left(id, kind)
  fids[#fids + 1] = id
  fkinds[#fkinds + 1] = kind
end

for k = 1, #ids do
  local i = 7 + (k - 1) * 5
  local op, id, dlv, num, err = ARGV[i], ids[k], ARGV[i + 2], tonumber(ARGV[i + 3]), ARGV[i + 4]
  local sdlv, retry, max, lvl = parse_state(sts[k])
  if not sdlv or string.format('%d', sdlv) ~= dlv or not leases[k] or (seen[id] and op ~= 'e') then
    out[#out + 1] = 0
    if op ~= 'e' then
      stale[#stale + 1] = id
      stale[#stale + 1] = dlv
    end
  elseif op == 'e' then
    extend[#extend + 1] = string.format('%d', nowc + num)
    extend[#extend + 1] = id
    out[#out + 1] = 1
    extended[#extended + 1] = #out
  else
    seen[id] = true
    unlease[#unlease + 1] = id
    if retry > 0 and (op == 'a' or op == 'c') then
      herase[#herase + 1] = id
    end
    if op == 'a' then
      forget[#forget + 1] = id
      if retention > 0 then
        kept[#kept + 1] = {id, 'completed', err, retry, sdlv}
      end
      processed = processed + 1
      micros = micros + num
      left(id, 'done')
      out[#out + 1] = 1
      later('completed', id, now, sdlv, retry)
    elseif op == 'c' then
      forget[#forget + 1] = id
      if retention > 0 then
        kept[#kept + 1] = {id, 'cancelled', '', retry, sdlv}
      end
      cancelled = cancelled + 1
      left(id, 'dead')
      out[#out + 1] = 1
      later('cancelled', id, now, sdlv, retry)
    elseif op == 'r' then
      redis.call('ZADD', lvkeys[lvl], int_str(now * 1000), id)
      released = released + 1
      out[#out + 1] = 1
    else
      retry = retry + 1
      failed = failed + 1
      later('failed', id, now, sdlv, retry, err)
      local hist = push_error(redis.call('HGET', KEYS[17], id), now, retry, err)
      if retry > max or op == 'd' then
        local body = redis.call('HGET', KEYS[1], id) or ''
        forget[#forget + 1] = id
        if retry > 1 then
          herase[#herase + 1] = id
        end
        trimmed = trimmed + push_dead(KEYS[8], dead_entry(id, err, now, retry, max, lvl, body, op == 'd', hist), dlqcap, ARGV[2])
        deadn = deadn + 1
        left(id, 'dead')
        out[#out + 1] = 2
        later('dead', id, now, sdlv, retry, err)
      else
        redis.call('HSET', KEYS[2], id, dlv .. ',' .. int_str(retry) .. ',' .. int_str(max) .. ',' .. lvl .. ',' .. err)
        redis.call('HSET', KEYS[17], id, hist)
        redis.call('ZADD', lvkeys[lvl], int_str((now + num) * 1000), id)
        later('retried', id, now, sdlv, retry)
        if num <= 0 then
          released = released + 1
        end
        out[#out + 1] = 1
      end
    end
  end
end

-- Reads before any write: the type of the progress hash (a key of
-- another type is left alone), and with jobs to keep, the done keys'
-- types, the jobs' bodies and their progress.
local ptype = (#unlease > 0 or #stale > 0) and redis.call('TYPE', KEYS[10]).ok or 'none'
-- the cancel hash: settled jobs' fields go, extended jobs' are reported
local ctype = (#unlease > 0 or #extended > 0) and redis.call('TYPE', KEYS[13]).ok or 'none'
if ctype == 'hash' and #extended > 0 then
  local eids = {}
  for x = 2, #extend, 2 do
    eids[#eids + 1] = extend[x]
  end
  local flags = mread('HMGET', KEYS[13], eids)
  for x, k in ipairs(extended) do
    if flags[x] then
      out[k] = 3
    end
  end
end
local keep = {}
if #kept > 0 then
  local dt, it = redis.call('TYPE', KEYS[11]).ok, redis.call('TYPE', KEYS[12]).ok
  if dt ~= 'none' and dt ~= 'hash' then
    return {'corrupt', 11, 'not a hash (WRONGTYPE)'}
  elseif it ~= 'none' and it ~= 'zset' then
    return {'corrupt', 12, 'not a sorted set (WRONGTYPE)'}
  end
  local kids = {}
  for x, e in ipairs(kept) do
    kids[x] = e[1]
  end
  local bodies = mread('HMGET', KEYS[1], kids)
  local progs = ptype == 'hash' and mread('HMGET', KEYS[10], kids) or {}
  for x, e in ipairs(kept) do
    local p = 'null'
    local d, js = string.match(progs[x] or '', '^(%d+),(.+)$')
    if d and d == int_str(e[5]) then
      p = js
    end
    keep[#keep + 1] = e[1]
    keep[#keep + 1] = done_entry(e[1], e[2], e[3], e[4], e[5], p, bodies[x], now)
  end
end
-- flows: the parents of the children that left (read here, written by
-- after()); a batch that touches one checks what it writes first, as a
-- batch other than acks and extends does
local plan = flow_plan(KEYS[15], fids, fkinds)
if plan and simple then
  local bad = stats_bad(KEYS[7], {'total_dead', 'total_dead_trimmed'})
  if bad then
    return {'corrupt', 7, bad}
  end
  typecheck({{'HLEN', 1}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'LLEN', 8}, {'LLEN', 9}})
end
-- after: the progress fields of settled deliveries go; jobs to keep are
-- kept, and the done hash loses its expired entries and those over the
-- cap (at most a batch's worth each time, so a lowered cap converges).
local function after()
  if plan then
    local d, tr = flow_apply(plan, KEYS[15], {jobs = KEYS[1], state = KEYS[2], levels = lvkeys, dlq = KEYS[8], wake = KEYS[9]},
      now, dlqcap, ARGV[2], evk, evn)
    add_counts(KEYS[7], {'total_dead', d, 'total_dead_trimmed', tr})
  end
  for _, e in ipairs(evs) do
    emit(evk, evn, e[1], e[2], e[3], e[4], e[5], e[6])
  end
  if ctype == 'hash' then
    batched('HDEL', KEYS[13], unlease)
  end
  if ptype == 'hash' then
    batched('HDEL', KEYS[10], unlease)
    -- a lost delivery (its job deleted or recovered) drops its own
    -- progress, not a later delivery's
    for x = 1, #stale, 2 do
      local v = redis.call('HGET', KEYS[10], stale[x])
      if v and string.sub(v, 1, #stale[x + 1] + 1) == stale[x + 1] .. ',' then
        redis.call('HDEL', KEYS[10], stale[x])
      end
    end
  end
  if #keep == 0 then
    return
  end
  keep_done(KEYS[11], KEYS[12], keep, now, retention, tonumber(ARGV[5]))
end

if simple and #herase > 0 then
  typecheck({{'HLEN', 17}})
end
local waking = wakeup and #unlease > 0 and redis.call('LLEN', KEYS[9]) == 0
local reply = {'ok', string.format('%d', nowc), out}
if simple then
  local prev = redis.call('SET', KEYS[14], cjson.encode(reply), 'PX', ARGV[3], 'NX', 'GET')
  if prev then
    local good, r = pcall(cjson.decode, prev)
    if not good or type(r) ~= 'table' or type(r[1]) ~= 'string' then
      return {'corrupt', 14, 'reply memo is not a reply'}
    end
    return r
  end
  if processed > 0 then
    local total = redis.pcall('HINCRBY', KEYS[7], 'total_processed', processed)
    local sum = nil
    if type(total) == 'number' and total >= processed and total <= 9007199254740991 then
      sum = redis.pcall('HINCRBY', KEYS[7], 'total_process_time_us', micros)
      if type(sum) ~= 'number' or sum < micros or sum > 9007199254740991 then
        if type(sum) == 'number' then
          redis.call('HINCRBY', KEYS[7], 'total_process_time_us', -micros)
        end
        redis.call('HINCRBY', KEYS[7], 'total_processed', -processed)
        sum = nil
      end
    elseif type(total) == 'number' then
      redis.call('HINCRBY', KEYS[7], 'total_processed', -processed)
    end
    if not sum then
      redis.call('DEL', KEYS[14])
      if type(total) == 'table' and string.find(total.err or '', 'WRONGTYPE', 1, true) then
        return {'corrupt', 7, 'not a hash (WRONGTYPE)'}
      end
      return {'corrupt', 7, 'field total_processed or total_process_time_us is not a count'}
    end
    for i = 1, #forget, 1000 do
      local r = redis.pcall('HDEL', KEYS[1], unpack(forget, i, math.min(i + 999, #forget)))
      if type(r) ~= 'number' then
        -- only the first chunk can fail (a wrong type): nothing deleted
        redis.call('HINCRBY', KEYS[7], 'total_processed', -processed)
        redis.call('HINCRBY', KEYS[7], 'total_process_time_us', -micros)
        redis.call('DEL', KEYS[14])
        return {'corrupt', 1, 'not a hash (WRONGTYPE)'}
      end
    end
    redis.call('HSET', KEYS[7], 'avg_process_time_ms', string.format('%.3f', sum / total / 1000),
      'last_processed_at', string.format('%d', now))
    count_day(KEYS[16] .. day_of(now), 'processed', processed)
  end
  batched('ZREM', KEYS[6], unlease)
  batched('HDEL', KEYS[2], forget)
  batched('HDEL', KEYS[17], herase)
  batched('ZADD', KEYS[6], extend, nil, nil, {'XX'})
  if waking then
    redis.call('RPUSH', KEYS[9], '1')
  end
  after()
  return reply
end

batched('HDEL', KEYS[1], forget)
batched('ZREM', KEYS[6], unlease)
batched('HDEL', KEYS[2], forget)
batched('HDEL', KEYS[17], herase)
batched('ZADD', KEYS[6], extend, nil, nil, {'XX'})
if processed > 0 then
  local total = redis.call('HINCRBY', KEYS[7], 'total_processed', processed)
  local sum = redis.call('HINCRBY', KEYS[7], 'total_process_time_us', micros)
  redis.call('HSET', KEYS[7], 'avg_process_time_ms', string.format('%.3f', sum / total / 1000),
    'last_processed_at', string.format('%d', now))
end
add_counts(KEYS[7], {'total_dead_trimmed', trimmed, 'total_dead', deadn, 'total_failed', failed, 'total_cancelled', cancelled})
if processed > 0 or failed > 0 then
  local day = KEYS[16] .. day_of(now)
  count_day(day, 'processed', processed)
  count_day(day, 'failed', failed)
end
if released > 0 or waking then
  wake(KEYS[9])
end
after()
return remember(KEYS[14], reply, ARGV[3])
