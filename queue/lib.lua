-- lib: the helpers the queue's scripts share. The call layer sends it
-- whole, after the prelude and before the script (call.Uses), to every
-- queue script but enqueue and tick (enqueue_lib.lua), pause, stats,
-- schedule and schedules.
--
-- Every mutating script takes as its last key a reply memo,
-- queue:{q}:reply:{request_id}, where request_id is random per request
-- and the same when go-redis resends it. The script first looks there: a
-- resent request gets the first run's outcome back (replayed), and a
-- first run stores its outcome (remember) for the replay window.

-- replayed returns the reply stored under key by the first run of this
-- request, nil on a first run, or false when key holds something this
-- package did not write.
local function replayed(key)
  local v = redis.call('GET', key)
  if not v then
    return nil
  end
  local good, r = pcall(cjson.decode, v)
  if not good or type(r) ~= 'table' or type(r[1]) ~= 'string' then
    return false
  end
  return r
end

-- remember stores reply under key for ttl ms and returns it.
local function remember(key, reply, ttl)
  redis.call('SET', key, cjson.encode(reply), 'PX', ttl)
  return reply
end

-- mread runs the variadic read cmd (HMGET, ZMSCORE) on key for every
-- element of list, in chunks of at most 1000 so that no call unpacks an
-- unbounded list, and returns the replies in list order (false for a
-- missing one).
local function mread(cmd, key, list)
  local out = {}
  for i = 1, #list, 1000 do
    local r = redis.call(cmd, key, unpack(list, i, math.min(i + 999, #list)))
    for x = 1, #r do
      out[#out + 1] = r[x]
    end
  end
  return out
end

-- stats_bad checks, before anything is written, that the stats hash
-- fields a script increments hold counts (HINCRBY would otherwise fail
-- half-way through the script): it returns nil, or why not.
local function stats_bad(key, fields)
  local vals = redis.call('HMGET', key, unpack(fields))
  for i = 1, #fields do
    if vals[i] and not to_int(vals[i], 0) then
      return 'field ' .. fields[i] .. ' is not a count: ' .. string.sub(vals[i], 1, 32)
    end
  end
  return nil
end

-- parse_state reads a state entry "dlv,retry,max,level,last error" with
-- every number in range; nil when it does not parse.
local function parse_state(st)
  if not st then
    return nil
  end
  local dlv, retry, max, lvl, lasterr = string.match(st, '^(%d+),(%d+),(%d+),(%l+),(.*)$')
  dlv, retry, max = to_int(dlv, 0), to_int(retry, 0), to_int(max, 0)
  if not (dlv and retry and max and (lvl == 'high' or lvl == 'normal' or lvl == 'low')) then
    return nil
  end
  return dlv, retry, max, lvl, lasterr
end

-- fresh_max returns the max retries of a job never delivered (it has no
-- state entry yet: its state is "0,0,<max>,<its priority set>,"), read
-- from the end of its JSON as this package writes it
-- (...,"max_retries":N}), as a string, or nil.
local function fresh_max(body)
  local max = string.match(body, '"max_retries":(%d+)}$', -24)
  if max and #max <= 6 then
    return max
  end
  return nil
end

-- fifo_score counts one enqueue in the stats hash and returns the score
-- of a job ready now: now ms × 1000 plus the FIFO sequence within the
-- millisecond, so jobs ready at once keep their order across producers
-- (up to 1000 per ms; beyond, ties go by ID). enq_seq is the last score
-- given, plus one per enqueue; when time has moved on it jumps to the
-- current millisecond, and enq_skipped adds up the jumps, so that
-- enq_seq - enq_skipped counts the enqueues (Enqueue does the same
-- inline).
local function fifo_score(stats, now)
  local base = now * 1000
  local score = redis.call('HINCRBY', stats, 'enq_seq', '1')
  if score < base then
    local jump = string.format('%d', base - score)
    redis.call('HINCRBY', stats, 'enq_skipped', jump)
    redis.call('HINCRBY', stats, 'enq_seq', jump)
    score = base
  elseif score > base + 999 then
    score = base + 999
  end
  return score
end

-- dead_entry returns a dead-letter list element: the job's stored JSON
-- under "job", or, when it is not a JSON object or raw is set (Go could
-- not decode it), the text as a string under "raw", so that one bad job
-- cannot make the list unreadable; hist, when given, is the job's attempt
-- errors (push_error), kept under "errors".
local function dead_entry(id, err, now, retry, max, lvl, body, raw, hist)
  local job = '"job":' .. (body or 'null')
  if body then
    local good, v = pcall(cjson.decode, body)
    if raw or not good or type(v) ~= 'table' then
      job = '"raw":' .. json_str(body) .. ',"job":null'
    end
  end
  local errs = hist and (',"errors":' .. hist) or ''
  return '{"id":' .. json_str(id) .. ',"error":' .. json_str(err) .. ',"failed_at":' .. int_str(now) .. errs ..
    ',"retry_count":' .. int_str(retry) .. ',"max_retries":' .. int_str(max) .. ',"level":"' .. lvl .. '",' .. job .. '}'
end

-- MAX_ERRORS is how many attempt errors a job keeps (errors hash).
local MAX_ERRORS = 10

-- push_error returns the JSON array of a job's attempt errors, old (the
-- errors hash's field, or nil) with {at, attempt, error} appended, the
-- oldest dropped past MAX_ERRORS. An old value that is not such an array
-- starts again.
local function push_error(old, now, attempt, err)
  local list = {}
  if old then
    local good, v = pcall(cjson.decode, old)
    if good and type(v) == 'table' then
      for _, e in ipairs(v) do
        if type(e) == 'table' and type(e.at) == 'number' and type(e.attempt) == 'number' and type(e.error) == 'string' then
          list[#list + 1] = '{"at":' .. int_str(e.at) .. ',"attempt":' .. int_str(e.attempt) .. ',"error":' .. json_str(e.error) .. '}'
        end
      end
    end
  end
  list[#list + 1] = '{"at":' .. int_str(now) .. ',"attempt":' .. int_str(attempt) .. ',"error":' .. json_str(err) .. '}'
  local first = math.max(1, #list - MAX_ERRORS + 1)
  return '[' .. table.concat(list, ',', first) .. ']'
end

-- push_dead adds entry to the dead-letter list dlq, trims it to cap and
-- refreshes its TTL; it returns how many old entries the trim dropped.
local function push_dead(dlq, entry, cap, ttl)
  local len = redis.call('LPUSH', dlq, entry)
  redis.call('PEXPIRE', dlq, ttl)
  if len > cap then
    redis.call('LTRIM', dlq, '0', cap - 1)
    return len - cap
  end
  return 0
end

-- DAILY_TTL_MS is the lifetime of a day's counts, queue:{q}:daily:{day}
-- (dailyTTL in keys.go: 91 days).
local DAILY_TTL_MS = '7862400000'

-- day_of returns the UTC day of the server time now (ms) as yyyy-mm-dd,
-- the {day} of a day's counts (the civil date of a day number, by eras of
-- 400 years).
local function day_of(now)
  local z = math.floor(now / 86400000) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then
    y = y + 1
  end
  return string.format('%04d-%02d-%02d', y, m, d)
end

-- count_day adds n to field (processed, failed) of the day's counts key
-- (the day's prefix and day_of): one HINCRBY, and a PEXPIRE only when the
-- field was just created (at most twice a day per queue). It uses pcall:
-- a key of another type loses the day's counts, never the settlement.
local function count_day(key, field, n)
  if n > 0 and redis.pcall('HINCRBY', key, field, int_str(n)) == n then
    redis.pcall('PEXPIRE', key, DAILY_TTL_MS)
  end
end

-- wake pushes the wake-up token onto the wake list unless it holds
-- something already.
local function wake(list)
  if redis.call('LLEN', list) == 0 then
    redis.call('RPUSH', list, '1')
  end
end

-- typecheck reads each KEYS[i] of spec ({cmd, i} pairs, cmd an O(1) read
-- of the key's type: HLEN, ZCARD, LLEN, XLEN) so that a key of the wrong
-- type fails the script with WRONGTYPE before anything is written; a key
-- the call did not pass (the events stream without WithEvents) is
-- skipped.
local function typecheck(spec)
  for _, c in ipairs(spec) do
    if KEYS[c[2]] then
      redis.call(c[1], KEYS[c[2]])
    end
  end
end

-- find_dead returns the dead-letter list's entry of job id (newest
-- first), reading the list in pages of 1000, or nil.
local function find_dead(dlq, id)
  local prefix = '{"id":' .. json_str(id) .. ','
  local len = redis.call('LLEN', dlq)
  for off = 0, len - 1, 1000 do
    for _, e in ipairs(redis.call('LRANGE', dlq, off, off + 999)) do
      if string.sub(e, 1, #prefix) == prefix then
        return e
      end
    end
  end
  return nil
end

-- dead_index returns, for the IDs of ids found in the dead-letter list
-- dlq, ID -> its newest entry, in one pass over the list (bounded by its
-- cap; it stops once every ID is found).
local function dead_index(dlq, ids)
  local want, left, found = {}, 0, {}
  for _, id in ipairs(ids) do
    local p = '{"id":' .. json_str(id) .. ','
    if not want[p] then
      want[p] = id
      left = left + 1
    end
  end
  local len = redis.call('LLEN', dlq)
  for off = 0, len - 1, 1000 do
    for _, e in ipairs(redis.call('LRANGE', dlq, off, off + 999)) do
      local p = string.match(e, '^{"id":"[^"\\]*",')
      local id = p and want[p]
      if not p then
        for q, x in pairs(want) do
          if string.sub(e, 1, #q) == q then
            id = x
            break
          end
        end
      end
      if id and not found[id] then
        found[id] = e
        left = left - 1
        if left == 0 then
          return found
        end
      end
    end
  end
  return found
end

-- add_counts adds to the stats hash every non-zero count of counts, a
-- list of field, count pairs.
local function add_counts(stats, counts)
  for i = 1, #counts, 2 do
    if counts[i + 1] > 0 then
      redis.call('HINCRBY', stats, counts[i], counts[i + 1])
    end
  end
end

-- done_entry returns the done hash's value of a finished job (WithRetention):
-- its state (completed | cancelled), when it finished, its result and
-- last progress (JSON, '' or nil for none) and its stored JSON.
local function done_entry(id, state, result, retry, dlv, progress, body, now)
  return '{"id":' .. json_str(id) .. ',"state":"' .. state .. '","finished_at":' .. int_str(now) ..
    ',"retry_count":' .. int_str(retry) .. ',"delivery":' .. int_str(dlv) ..
    ',"result":' .. ((result and result ~= '') and result or 'null') ..
    ',"progress":' .. ((progress and progress ~= '') and progress or 'null') .. ',"job":' .. (body or 'null') .. '}'
end

-- keep_done writes keep (id, entry pairs) to the done hash h and its
-- expiry index z, then drops the entries past their expiry and the oldest
-- over cap (at most 1000 of each per call, so a lowered cap converges),
-- and sets both keys to expire with the newest entry.
local function keep_done(h, z, keep, now, retention, cap)
  local exp = string.format('%d', now + retention)
  local zadd = {}
  for x = 1, #keep, 2 do
    zadd[#zadd + 1] = exp
    zadd[#zadd + 1] = keep[x]
  end
  batched('HSET', h, keep)
  batched('ZADD', z, zadd)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', int_str(now), 'LIMIT', '0', '1000')
  batched('ZREM', z, gone)
  batched('HDEL', h, gone)
  local over = redis.call('ZCARD', z) - cap
  if over > 0 then
    local r = redis.call('ZPOPMIN', z, math.min(over, 1000))
    local drop = {}
    for x = 1, #r, 2 do
      drop[#drop + 1] = r[x]
    end
    batched('HDEL', h, drop)
  end
  redis.call('PEXPIRE', h, retention)
  redis.call('PEXPIRE', z, retention)
end

-- emit adds one lifecycle event to the stream ev (WithEvents; nil: no
-- events), capped at about evlen entries: its kind, the job ID, the
-- server time, and the optional delivery, retry count, error and
-- progress JSON.
local function emit(ev, evlen, kind, id, now, dlv, retry, err, progress)
  if not ev then
    return
  end
  local a = {'XADD', ev, 'MAXLEN', '~', evlen, '*', 'kind', kind, 'job_id', id, 'at', int_str(now)}
  if dlv then
    a[#a + 1] = 'delivery'
    a[#a + 1] = int_str(dlv)
  end
  if retry then
    a[#a + 1] = 'retry_count'
    a[#a + 1] = int_str(retry)
  end
  if err and err ~= '' then
    a[#a + 1] = 'error'
    a[#a + 1] = err
  end
  if progress then
    a[#a + 1] = 'progress'
    a[#a + 1] = progress
  end
  redis.call(unpack(a))
end

-- Flows (EnqueueFlow): the flows hash fh holds "p:<parent>" -> "children
-- left,policy,level" for a parent waiting for its children (it is in the
-- jobs hash, in no priority set), and "c:<child>" -> the parent's ID.
-- flow_plan reads, for jobs that left the queue (ids, with kinds[i]
-- 'done' or 'dead'), the parents concerned and what becomes of them; it
-- writes nothing (a key of the wrong type fails it before any write) and
-- returns nil when no job of ids is a flow's child. A dead child fails
-- its parent (policy "fail") or counts as finished ("ignore").
local function flow_plan(fh, ids, kinds)
  if #ids == 0 or redis.call('EXISTS', fh) == 0 then
    return nil
  end
  local cf = {}
  for i, id in ipairs(ids) do
    cf[i] = 'c:' .. id
  end
  local ps = mread('HMGET', fh, cf)
  local plan = {drop = {}, byid = {}, order = {}}
  for i, p in ipairs(ps) do
    if p then
      plan.drop[#plan.drop + 1] = cf[i]
      local e = plan.byid[p]
      if not e then
        local left, pol, lvl = string.match(redis.call('HGET', fh, 'p:' .. p) or '', '^(%d+),(%a+),(%l+)$')
        e = {id = p, left = tonumber(left), pol = pol, lvl = lvl}
        plan.byid[p] = e
        plan.order[#plan.order + 1] = e
      end
      if e.left and not e.failed then
        if kinds[i] == 'dead' and e.pol == 'fail' then
          e.failed = 'flow child ' .. ids[i] .. ' is dead'
        else
          e.left = e.left - 1
        end
      end
    end
  end
  if #plan.drop == 0 then
    return nil
  end
  return plan
end

-- flow_apply writes a flow_plan: the children's fields go; a parent whose
-- children all finished becomes ready (score now, in its priority set); a
-- failed one is dead-lettered with the reason; the others count down. It
-- returns the parents dead-lettered and the dead letters trimmed.
-- k: {jobs, state, levels (by name), dlq, wake}; ev, evlen: the events.
local function flow_apply(plan, fh, k, now, dlqcap, dlqttl, ev, evlen)
  batched('HDEL', fh, plan.drop)
  local deadn, trimmed, ready = 0, 0, false
  for _, e in ipairs(plan.order) do
    if e.left and (e.failed or e.left <= 0) then
      redis.call('HDEL', fh, 'p:' .. e.id)
      local body = redis.call('HGET', k.jobs, e.id)
      if body and e.failed then
        redis.call('HDEL', k.jobs, e.id)
        redis.call('HDEL', k.state, e.id)
        trimmed = trimmed + push_dead(k.dlq, dead_entry(e.id, e.failed, now, 0, 0, e.lvl, body), dlqcap, dlqttl)
        deadn = deadn + 1
        emit(ev, evlen, 'dead', e.id, now, nil, 0, e.failed)
      elseif body and k.levels[e.lvl] then
        redis.call('ZADD', k.levels[e.lvl], int_str(now * 1000), e.id)
        ready = true
      end
    elseif e.left then
      redis.call('HSET', fh, 'p:' .. e.id, int_str(e.left) .. ',' .. e.pol .. ',' .. e.lvl)
    end
  end
  if ready then
    wake(k.wake)
  end
  return deadn, trimmed
end
