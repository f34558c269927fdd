-- dequeue: adopt jobs pushed in the seed's own format, recover expired
-- leases, then lease up to n ready jobs, highest priority first, FIFO
-- within a priority. A resent request gets its first run's leases back.
--
-- KEYS[1]  jobs hash      queue:{q}:jobs
-- KEYS[2]  state hash     queue:{q}:state
-- KEYS[3]  high zset      queue:{q}:priority:high
-- KEYS[4]  normal zset    queue:{q}:priority:normal
-- KEYS[5]  low zset       queue:{q}:priority:low
-- KEYS[6]  active zset    queue:{q}:active      id -> lease deadline (ms)
-- KEYS[7]  stats hash     queue:stats:{q}
-- KEYS[8]  dead list      queue:dlq:{q}
-- KEYS[9]  wake list      queue:{q}:executions
-- KEYS[10] inbox list     queue:{q}:inbox
--          (WithSeedConsumers: KEYS[9] is the inbox, which holds the token,
--          and KEYS[10] the executions list, read at every dequeue
--          (ARGV[8] "1"), so the token never enters the list that the
--          seed's consumers pop)
-- KEYS[11] reply memo     queue:{q}:reply:{request_id}
-- KEYS[12] flows hash     queue:{q}:flows       flow parents and children
-- KEYS[13] day prefix     queue:{q}:daily: (the day's counts are this
--          prefix and the server's UTC day, yyyy-mm-dd)
-- KEYS[14] errors hash    queue:{q}:errors      id -> last attempt errors
-- KEYS[15] progress hash  queue:{q}:progress    id -> delivery,progress JSON
-- KEYS[16] rate string    queue:{q}:rate, with limits (ARGV[10]) only
-- KEYS[17] the prefix of a group's lease set, queue:{q}:gactive:, and
-- KEYS[18] the prefix of a group's rate key, queue:{q}:grate:, with
--          limits only: a group's keys are the prefix and the group
--          name, which the script learns from a job (declared in keys as
--          queue:{queue_name}:gactive:{group} and :grate:{group})
-- KEYS[#KEYS] events stream  queue:{q}:events, with WithEvents only
-- ARGV[1] n: most jobs to lease (1 to 512)
-- ARGV[2] lease in ms
-- ARGV[3] dead-letter cap (entries kept)
-- ARGV[4] dead-letter TTL in ms
-- ARGV[5] reply memo TTL in ms
-- ARGV[6] default max retries (for adopted jobs)
-- ARGV[7] longest lease in ms: a deadline further away is not ours
-- ARGV[8] "1": read the inbox too (a caller that waited on the wake list,
--         or starts); else only the wake list is read for jobs pushed in
--         the seed's format
-- ARGV[9] events stream length, with WithEvents only: started for each
--         job leased; failed, then retried or dead, for each expired
--         lease; dead for each job dead-lettered
-- ARGV[10] the limits, as JSON, with WithGlobalConcurrency, WithRateLimit
--         or group limits only (else absent: nothing below reads a limit):
--         c the most leases at once (the active set's size), r jobs per
--         p ms (fixed windows of the server clock, counted in the rate
--         key), g the default group limits and o the groups' own ({c,
--         r, p} each); with group limits also the tuning of pick: scan the
--         most ready jobs one dequeue looks at (GROUP_SCAN below), look
--         (GROUP_LOOK), seen_ms and seen_max (GROUP_SEEN_MS and
--         GROUP_SEEN_MAX: the age and size of the remembered list) and
--         glen, the longest group name (MAX_GROUP). A group's leases are its lease set's members still in
--         the active set (so an ack, a release or a recovered lease frees
--         its place at once); a ready job of a group at its limit is
--         skipped and keeps its place; up to GROUP_SCAN ready jobs are
--         looked at (fewer once a job is found: see pick), and the groups
--         found are served in turn.
-- While the stats hash has a paused field (Pause) nothing is leased.
-- Returns {'ok', wait, {id, delivery, retry, max, level, json, lease_deadline,
-- last_error, ...}, {key_index, why, ...}}: wait is -1 when jobs were
-- leased or nothing is pending, else the ms until the next delayed job or
-- lease deadline is due; the last list names what was found corrupt (and
-- repaired: dead-lettered, dropped, or a limit key deleted) on the way
-- (key index 0: a limit key, named before a newline in the text). {'corrupt', i, why} when a
-- stats field or the memo is not this package's.
--
-- A call that fails (a key of the wrong type, or {'corrupt', i, why})
-- writes nothing. The stats hash's fields are read once, up front. Steps
-- 0 and 1 (adopting, recovering), which write keys they have not read,
-- first read the types of every key a later step may write and the
-- counters they add to (check), so nothing after their first write can
-- fail. Else the first write is step 2c's: 2b first reads every level the
-- request reaches, its jobs' states and bodies, what dead-lettering one
-- needs (check), and checks delivery_seq (and, idle, enq_skipped); an
-- inbox of wake-up tokens is emptied, and a corrupt limit key deleted,
-- only in 2c (an inbox holding jobs is emptied as step 0 adopts them).
-- The common path pays for no extra reads.
--
-- Leases are rounded toward safety: a deadline is the server time in ms
-- rounded up plus the lease, and a lease is recovered only once the
-- server time is strictly past it, so it never ends on the server before
-- the holder's local deadline (the lease counted from before the call).
local memo = replayed(KEYS[11])
if memo == false then
  return {'corrupt', 11, 'reply memo is not a reply'}
end
local lvkeys = {high = KEYS[3], normal = KEYS[4], low = KEYS[5]}
local evk, evn = ARGV[9] ~= '0' and KEYS[#KEYS] or nil, ARGV[9]
local nowus = now_us()
local now = math.floor(nowus / 1000)
local nowc = math.ceil(nowus / 1000)
local deadline = nowc + tonumber(ARGV[2])
if evk then
  redis.call('XLEN', evk) -- a stream of the wrong type fails before any write
end

if memo then
  -- A resend: the first run's leases, if still held under the same
  -- delivery.
  local rows = {}
  local ids, dlvs = memo[2], memo[3]
  for k = 1, #ids do
    local id = ids[k]
    local dlv, retry, max, lvl, lasterr = parse_state(redis.call('HGET', KEYS[2], id))
    local body = redis.call('HGET', KEYS[1], id)
    local lease = redis.call('ZSCORE', KEYS[6], id)
    if dlv and int_str(dlv) == dlvs[k] and body and lease then
      for _, v in ipairs({id, dlv, retry, max, lvl, body, tonumber(lease), lasterr}) do
        rows[#rows + 1] = v
      end
    end
  end
  return {'ok', -1, rows, {}}
end

-- The stats hash's fields the call depends on, read before any write (a
-- stats key of the wrong type fails here): paused (Pause), delivery_seq
-- (checked in step 2b before it is written) and pick's group_rr and
-- group_seen.
local sv = redis.call('HMGET', KEYS[7], 'paused', 'delivery_seq', 'group_rr', 'group_seen')
-- MAX_SEQ: delivery_seq stays a count Lua's doubles hold exactly
local MAX_SEQ = 9007199254740991
local checked = false
-- check reads the type of every key a rare step may write without
-- reading it first (jobs, state, priorities, dead letters), and the
-- stats counters those steps add to, once; it returns why the stats
-- hash is not this package's, or nil. A delivery_seq within 3n of
-- MAX_SEQ (the most a call may add) is not a count either, so that a
-- call that adopts or recovers cannot fail on it in step 2b.
local function check()
  if not checked then
    typecheck({{'HLEN', 1}, {'HLEN', 2}, {'ZCARD', 3}, {'ZCARD', 4}, {'ZCARD', 5}, {'LLEN', 8}, {'HLEN', 12}, {'HLEN', 14}, {'HLEN', 15}})
    checked = true
    local bad = stats_bad(KEYS[7], {'enq_seq', 'enq_skipped', 'delivery_seq', 'total_failed', 'total_dead', 'total_dead_trimmed'})
    if not bad and sv[2] and to_int(sv[2]) > MAX_SEQ - 3 * tonumber(ARGV[1]) then
      bad = 'field delivery_seq is not a count: ' .. sv[2]
    end
    return bad
  end
end
local notes = {}
local fids = {} -- jobs dead-lettered, for their flows (flow_plan)
local trimmed, deadn, failed = 0, 0, 0
local function note(i, why)
  notes[#notes + 1] = i
  notes[#notes + 1] = why
end
local function dead(id, retry, max, lvl, err)
  local body = redis.call('HGET', KEYS[1], id)
  local hist = push_error(redis.call('HGET', KEYS[14], id), now, retry, err)
  redis.call('HDEL', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[14], id)
  redis.call('HDEL', KEYS[15], id) -- its progress: a dead job is never settled
  trimmed = trimmed + push_dead(KEYS[8], dead_entry(id, err, now, retry, max, lvl, body, nil, hist), tonumber(ARGV[3]), ARGV[4])
  deadn = deadn + 1
  emit(evk, evn, 'dead', id, now, nil, retry, err)
  fids[#fids + 1] = id
end

-- 0. adopt what the wake list and the inbox hold besides wake-up tokens:
-- jobs pushed in the seed's format (an LPUSH of the job's JSON), oldest
-- first. A job becomes a ready job of its priority; anything else is
-- dead-lettered with the reason, never dropped.
-- rfc3339_ok reports whether s is a time that Go's time.Time reads back
-- from JSON (RFC 3339: a real date, hours, minutes and seconds in range,
-- an optional fraction, Z or a +hh:mm offset), so that an adopted job's
-- created_at never fails its decode.
local function rfc3339_ok(s)
  local y, mo, d, h, mi, sec, rest = string.match(s, '^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)(.*)$')
  if not y then return false end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  local dim = {31, (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)) and 29 or 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
  if mo < 1 or mo > 12 or d < 1 or d > dim[mo] or tonumber(h) > 23 or tonumber(mi) > 59 or tonumber(sec) > 59 then
    return false
  end
  rest = string.gsub(rest, '^%.%d+', '', 1)
  if rest == 'Z' then return true end
  local oh, om = string.match(rest, '^[%+%-](%d%d):(%d%d)$')
  return oh ~= nil and tonumber(oh) < 24 and tonumber(om) < 60
end

local function adopt(raw, k, src)
  local good, v = pcall(cjson.decode, raw)
  local id = 'adopted-' .. int_str(nowus) .. '-' .. k
  if not good or type(v) ~= 'table' or v[1] ~= nil then
    trimmed = trimmed + push_dead(KEYS[8], dead_entry(id, 'not a job: the wake list held a value that is not a JSON object', now, 0, 0, 'normal', raw),
      tonumber(ARGV[3]), ARGV[4])
    deadn = deadn + 1
    note(src, 'dead-lettered an element that is not a job as ' .. id)
    return
  end
  if type(v.id) == 'string' and v.id ~= '' and #v.id <= 1024 then
    id = v.id
  end
  local lvl, prio = 'normal', 0
  local p = v.priority
  if p == 'high' or p == 'low' then
    p = p == 'high' and 1 or -1
  end
  p = tonumber(p)
  if p and p > 0 then
    lvl, prio = 'high', 1
  elseif p and p < 0 then
    lvl, prio = 'low', -1
  end
  if redis.call('HEXISTS', KEYS[1], id) == 1 then
    trimmed = trimmed + push_dead(KEYS[8], dead_entry(id, 'adopted job: a live job has its ID', now, 0, 0, lvl, raw),
      tonumber(ARGV[3]), ARGV[4])
    deadn = deadn + 1
    return
  end
  -- created_at: RFC 3339 as written (rfc3339_ok), or Unix ms (JavaScript's
  -- Date.now(), a number or a string of digits) as RFC 3339; else now.
  local created = v.created_at
  local ms = type(created) == 'number' and created or nil
  if type(created) == 'string' and string.match(created, '^%d+$') then
    ms = tonumber(created)
  end
  if ms then
    created = ms >= 0 and ms < 253402300800000 and ms % 1 == 0 and rfc3339(ms) or rfc3339(now)
  elseif type(created) ~= 'string' or not rfc3339_ok(created) then
    created = rfc3339(now)
  end
  local retry = to_int(v.retry_count, 0, 1000000) or 0
  local max = tonumber(ARGV[6])
  redis.call('HSET', KEYS[1], id, '{"id":' .. json_str(id) .. ',"payload":' .. raw .. ',"priority":' .. prio ..
    ',"created_at":' .. json_str(created) .. ',"retry_count":' .. int_str(retry) .. ',"max_retries":' .. int_str(max) .. '}')
  redis.call('HSET', KEYS[2], id, '0,' .. int_str(retry) .. ',' .. int_str(max) .. ',' .. lvl .. ',')
  redis.call('ZADD', lvkeys[lvl], int_str(fifo_score(KEYS[7], now)), id)
end
local inbox = ARGV[8] == '1' and redis.call('LRANGE', KEYS[10], '-1000', '-1') or {}
local tail = redis.call('LRANGE', KEYS[9], '-1000', '-1')
-- step 1's reads of the active set come before step 0's first write (an
-- adopted job never has a lease), so an active set of the wrong type
-- fails the script before anything is adopted
local expired = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', '(' .. int_str(nowc), 'LIMIT', '0', '100')
local far = redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. int_str(nowc + tonumber(ARGV[7])), '+inf', 'LIMIT', '0', '100')
local function holds_jobs(list)
  for _, e in ipairs(list) do
    if e ~= '1' then
      return true
    end
  end
  return false
end
-- step 1's leases to recover: the expired ones, and those ending further
-- away than the longest lease (not written by this package: reported)
for _, id in ipairs(far) do
  expired[#expired + 1] = id
  note(6, 'lease of ' .. id .. ' ends further away than the longest lease; recovered')
end
local foreign = holds_jobs(tail)
local adopting = holds_jobs(inbox)
if foreign or adopting or #expired > 0 then
  local bad = check()
  if bad then
    return {'corrupt', 7, bad}
  end
end
-- the inbox, read whole, is emptied with the jobs adopted from it (so
-- that no later step can leave them to be adopted again), or, holding
-- only wake-up tokens, with step 2's writes
if adopting then
  redis.call('LTRIM', KEYS[10], '0', -(#inbox + 1))
end
-- the wake list, when its tail was read and left alone, is known to hold
-- something exactly when the tail did: a wake-up then needs no LLEN.
local awake = #tail > 0
if foreign then
  redis.call('LTRIM', KEYS[9], '0', -(#tail + 1))
  wake(KEYS[9])
end
local k = 0
for li, list in ipairs({inbox, foreign and tail or {}}) do
  for x = #list, 1, -1 do
    if list[x] ~= '1' then
      k = k + 1
      adopt(list[x], k, li == 1 and 10 or 9)
    end
  end
end

-- 1. expired leases come back (a crashed worker counts as a failed
-- attempt); a deadline further than the longest lease was not written by
-- this package: recovered too, and reported. (expired and far were read,
-- and check run, before step 0.)
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[6], id)
  local st = redis.call('HGET', KEYS[2], id)
  local dlv, retry, max, lvl = parse_state(st)
  if redis.call('HEXISTS', KEYS[1], id) == 0 then
    -- reported as a queued ID without its job is (step 2), naming the
    -- jobs hash, whether or not its state is left
    if st then
      redis.call('HDEL', KEYS[2], id)
      redis.call('HDEL', KEYS[14], id)
    end
    note(1, 'job ' .. id .. ' was in flight without its JSON; dropped')
  elseif st then
    failed = failed + 1
    emit(evk, evn, 'failed', id, now, dlv, dlv and retry + 1, 'lease expired')
    if not dlv then
      dead(id, 0, 0, 'normal', 'corrupt job state')
      note(2, 'state of ' .. id .. ' does not parse; job dead-lettered')
    elseif retry + 1 > max then
      dead(id, retry + 1, max, lvl, 'lease expired')
    else
      redis.call('HSET', KEYS[2], id, int_str(dlv) .. ',' .. int_str(retry + 1) .. ',' .. int_str(max) .. ',' .. lvl .. ',lease expired')
      redis.call('HSET', KEYS[14], id, push_error(redis.call('HGET', KEYS[14], id), now, retry + 1, 'lease expired'))
      redis.call('ZADD', lvkeys[lvl], int_str(now * 1000), id)
      emit(evk, evn, 'retried', id, now, dlv, retry + 1)
    end
  else
    redis.call('HDEL', KEYS[1], id)
    note(2, 'job ' .. id .. ' was in flight without a state; dropped')
  end
end

-- 2. lease ready jobs, unless the queue is paused: the stats hash's
-- paused field (Pause, read up front), so jobs in flight finish and
-- expired leases still come back, but nothing new is delivered.
local paused = sv[1]
-- The ready jobs of a level are the lowest scores, so
-- the first k of ZRANGEBYSCORE are ranks 0..k-1; every write is batched.
local n = paused and 0 or tonumber(ARGV[1])
local rows, leased, dlvs = {}, {}, {}
local maxscore = int_str(now * 1000 + 999)
local sdeadline = string.format('%d', deadline)

-- 2a. limits (ARGV[10]): the queue's cap and rate lower n; with group
-- limits, pick() chooses the jobs.
local lim = (not paused and ARGV[10]) and cjson.decode(ARGV[10]) or nil
-- limited: the queue's limits held jobs back; gheld: a group's did;
-- lwait: ms until the first rate window that held one back ends
local limited, gheld, lwait = false, false, nil
local function hold(wait)
  if wait and (not lwait or wait < lwait) then
    lwait = wait
  end
end
-- knote reports a limit key (named, not in KEYS) found corrupt and
-- repaired: the note's index is 0 and its text the key, a newline, why.
-- The key is deleted with step 2's writes (repairs), so that a call that
-- fails leaves it.
local repairs = {}
local function knote(key, why)
  note(0, key .. '\n' .. why)
  repairs[#repairs + 1] = key
end
-- used reads a rate key ("window,count"): the jobs leased in window win.
-- A key of another type or value is not this package's: it is deleted
-- (its window starts again) and reported.
local function used(key, win)
  local v = redis.pcall('GET', key)
  if type(v) == 'table' then
    knote(key, 'not a string (WRONGTYPE); deleted')
    return 0
  end
  local w, c = string.match(v or '', '^(%d+),(%d+)$')
  if v and not w then
    knote(key, 'rate window ' .. string.sub(v, 1, 32) .. ' is not window,count; deleted')
  end
  if w and tonumber(w) == win then
    return tonumber(c)
  end
  return 0
end
local qwin, qused
if lim then
  if lim.c then
    local room = lim.c - redis.call('ZCARD', KEYS[6])
    if room < n then
      n, limited = math.max(room, 0), true
    end
  end
  if lim.r then
    qwin = math.floor(now / lim.p)
    qused = used(KEYS[16], qwin)
    if lim.r - qused < n then
      n, limited = math.max(lim.r - qused, 0), true
      hold((qwin + 1) * lim.p - now)
    end
  end
end
local grouped = lim and (lim.g or lim.o) and n > 0
-- pick's tuning, sent by Go with the group limits (ARGV[10])
local GROUP_SCAN, GROUP_LOOK, GROUP_SEEN_MS, GROUP_SEEN_MAX, MAX_GROUP
if grouped then
  GROUP_SCAN, GROUP_LOOK, GROUP_SEEN_MS, GROUP_SEEN_MAX, MAX_GROUP = lim.scan, lim.look, lim.seen_ms, lim.seen_max, lim.glen
end
local gs, jobgroup, scanned = {}, {}, 0
local rr0, seen0 = '', nil
if grouped then
  rr0, seen0 = sv[3] or '', sv[4]
end
local rr = rr0
-- The groups the last whole read of the ready sets found (the stats
-- hash's group_seen, "ms|g1,g2,..."), when it is at most GROUP_SEEN_MS
-- old: pick may stop early only once it has seen them all. Anything else
-- in the field (or an older list) counts as no list, and the next whole
-- read writes it again. seen: the groups this dequeue found, whole: it
-- read every level's set to its end (or to GROUP_SCAN).
local remembered
if seen0 then
  local t, list = string.match(seen0, '^(%d+)|([%w._,-]*)$')
  t = t and tonumber(t)
  if t and t <= now and now - t <= GROUP_SEEN_MS then
    remembered = {}
    for g in string.gmatch(list, '[^,]+') do
      remembered[#remembered + 1] = g
    end
  end
end
local seen, seenset, whole = {}, {}, grouped
-- gstate reads group g's room: its limits less its live leases (members
-- of its lease set still in the active set; the others, s.gone, are
-- dropped with the leases' writes at the end) and its starts in the
-- current window. A group without a concurrency cap still gets its
-- leases added to its lease set: the set's type is read here (one ZCARD
-- per group and call), before any lease is written.
local function gstate(g)
  local s = gs[g]
  if s then
    return s
  end
  local l = (lim.o and lim.o[g]) or lim.g or {}
  s = {room = math.huge, taken = 0, l = l}
  local k = KEYS[17] .. g
  local mem
  if l.c then
    mem = redis.pcall('ZRANGE', k, '0', '-1')
  else
    mem = redis.pcall('ZCARD', k)
  end
  if type(mem) == 'table' and mem.err then
    knote(k, 'not a sorted set (WRONGTYPE); deleted')
    mem = {}
  end
  if l.c then
    local live, gone = 0, {}
    if #mem > 0 then
      local sc = mread('ZMSCORE', KEYS[6], mem)
      for x = 1, #mem do
        if sc[x] then
          live = live + 1
        else
          gone[#gone + 1] = mem[x]
        end
      end
    end
    s.gone = gone
    s.room = l.c - live
    if s.room <= 0 then
      hold(nil)
    end
  end
  if l.r then
    s.win = math.floor(now / l.p)
    s.used = used(KEYS[18] .. g, s.win)
    if l.r - s.used < s.room then
      s.room = l.r - s.used
    end
    if l.r - s.used <= 0 then
      hold((s.win + 1) * l.p - now)
    end
  end
  gs[g] = s
  return s
end
-- group_of returns the group of a job's JSON (the envelope's last field
-- but max_retries, within its last MAX_GROUP + 40 bytes), or '' for none.
-- A plain find of each '"group":"' there, then one anchored match, costs
-- a tenth of an unanchored pattern tried at each of those positions (a
-- held dequeue reads up to GROUP_SCAN bodies); a "group" key of the
-- payload before the envelope's does not match, and the search goes on.
local function group_of(body)
  local find = string.find
  local p = find(body, '"group":"', -(MAX_GROUP + 40), true)
  while p do
    local g = string.match(body, '^([^"\\]*)","max_retries":%d+}$', p + 9)
    if g then
      return g
    end
    p = find(body, '"group":"', p + 1, true)
  end
  return ''
end
-- pick returns up to m ready jobs of the level set key, skipping those
-- whose group has no room, taking the groups found in turn (oldest first
-- within a group); ungrouped jobs are a group of their own, without limits.
-- It reads the set 100 jobs at a time, and stops early once it has a job,
-- every group seen is full, and (within its first GROUP_LOOK jobs) every
-- group of the remembered list has been seen or is full too: a consumer
-- asks for more jobs than the groups have room for (it prefetches), and
-- reading on to GROUP_SCAN would only skip more jobs of full groups.
-- Without a fresh list it reads on (and the list is written again), so a
-- group further in is found at least every GROUP_SEEN_MS, by every
-- dequeue that finds the groups before it full, and by every dequeue
-- while it is remembered and within GROUP_LOOK.
local function pick(key, m)
  local buckets, order, eligible, off = {}, {}, 0, 0
  local ended = false
  while eligible < m and scanned < GROUP_SCAN do
    local want = math.min(100, GROUP_SCAN - scanned)
    local ids = redis.call('ZRANGEBYSCORE', key, '-inf', maxscore, 'LIMIT', off, want)
    if #ids < want then
      ended = true
    end
    if #ids == 0 then
      break
    end
    off, scanned = off + #ids, scanned + #ids
    local bodies = mread('HMGET', KEYS[1], ids)
    for x, id in ipairs(ids) do
      local g = bodies[x] and group_of(bodies[x]) or ''
      local b = buckets[g]
      if not b then
        b = {s = g == '' and {room = math.huge, taken = 0} or gstate(g), g = g}
        buckets[g] = b
        order[#order + 1] = b
      end
      if #b < b.s.room then
        b[#b + 1] = id
        eligible = eligible + 1
      elseif g ~= '' then
        gheld = true
      end
    end
    if eligible > 0 and remembered and not ended then
      local full = true
      for _, b in ipairs(order) do
        if #b < b.s.room then
          full = false
          break
        end
      end
      if off < GROUP_LOOK then
        for _, g in ipairs(remembered) do
          if not full then
            break
          end
          full = buckets[g] ~= nil or gstate(g).room <= 0
        end
      end
      if full then
        break
      end
    end
  end
  if not (ended or scanned >= GROUP_SCAN) then
    whole = false
  end
  for _, b in ipairs(order) do
    if b.g ~= '' and not seenset[b.g] then
      seenset[b.g] = true
      seen[#seen + 1] = b.g
    end
  end
  -- round-robin by group name, from the first after the last served
  -- (the stats hash's group_rr), across dequeues
  table.sort(order, function(x, y) return x.g < y.g end)
  local start = 1
  for x, b in ipairs(order) do
    if b.g > rr then
      start = x
      break
    end
  end
  local out = {}
  local r = 1
  while #out < m do
    local any = false
    for k = 0, #order - 1 do
      local b = order[(start - 1 + k) % #order + 1]
      if b[r] and #out < m then
        out[#out + 1] = b[r]
        jobgroup[b[r]] = b
        b.s.room = b.s.room - 1
        rr = b.g
        any = true
      end
    end
    if not any then
      break
    end
    r = r + 1
  end
  return out
end

-- 2b. plan: read every level the request reaches (while the levels above
-- leave it short), the states and bodies of its jobs, and, when a job
-- must be dead-lettered, the keys and counters that needs (check), all
-- before the first write. A job never delivered has no state entry
-- yet: its state is fresh_state's.
local plan, want, total, unread = {}, n, 0, {}
for i = 3, 5 do
  if want <= 0 then
    whole = false
    break
  end
  if grouped and scanned >= GROUP_SCAN then
    unread[#unread + 1] = {'ZCARD', i} -- pick reads no more
  end
  local ids
  if grouped then
    ids = pick(KEYS[i], want)
  else
    ids = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', maxscore, 'LIMIT', '0', want)
  end
  if #ids > 0 then
    local sts = mread('HMGET', KEYS[2], ids)
    local bodies = mread('HMGET', KEYS[1], ids)
    local fresh, good = {}, 0
    for j = 1, #ids do
      local body = bodies[j]
      if body then
        if not sts[j] then
          fresh[j] = fresh_max(body)
        end
        if fresh[j] or parse_state(sts[j]) then
          good = good + 1
        else
          local bad = check()
          if bad then
            return {'corrupt', 7, bad}
          end
        end
      end
    end
    plan[#plan + 1] = {i = i, ids = ids, sts = sts, bodies = bodies, fresh = fresh}
    want, total = want - good, total + good
  end
end
if total == 0 then
  -- step 4 reads every level: one pick left unread (it had read
  -- GROUP_SCAN jobs, none leased) has its type read now
  typecheck(unread)
end
-- the delivery sequence, a count in [0, MAX_SEQ]: each level's jobs take
-- the next #ids values. It lags the server clock (µs) only after data
-- loss (a restart that lost the stats hash, an older snapshot, a
-- failover): then it moves there, so that a token is not given again,
-- and a stale holder cannot settle the new delivery.
local dseq = 0
if #plan > 0 and sv[2] then
  dseq = to_int(sv[2], 0)
  if not dseq then
    return {'corrupt', 7, 'field delivery_seq is not a count'}
  end
end
for _, p in ipairs(plan) do
  p.seq = math.max(dseq, nowus)
  dseq = p.seq + #p.ids
  if dseq > MAX_SEQ then
    return {'corrupt', 7, 'field delivery_seq is not a count'}
  end
end
-- step 3's read: an idle call moves enq_seq back (see 3 below); not one
-- that the queue's limits held to no job at all, as jobs may be ready
-- (and this call can take none: no enqueue needs to wake it)
local eseq, eskip
if not paused and total == 0 and not (limited and n == 0) then
  local v = redis.call('HMGET', KEYS[7], 'enq_seq', 'enq_skipped')
  eseq = v[1] and to_int(v[1])
  if eseq and eseq >= now * 1000 - 1 then
    eskip = to_int(v[2] or '0')
    if not eskip then
      return {'corrupt', 7, 'field enq_skipped is not a count'}
    end
  end
end

-- 2c. the writes: the inbox's tokens go (unless step 0 emptied it),
-- the limit keys found corrupt are deleted, and each level's jobs are
-- leased (or dead-lettered, or dropped when their JSON is gone).
if #inbox > 0 and not adopting then
  redis.call('LTRIM', KEYS[10], '0', -(#inbox + 1))
end
for _, k in ipairs(repairs) do
  redis.call('DEL', k)
end
for _, p in ipairs(plan) do
  local ids, sts, bodies, fresh = p.ids, p.sts, p.bodies, p.fresh
  local lvl0 = p.i == 3 and 'high' or (p.i == 4 and 'normal' or 'low')
  if grouped then
    batched('ZREM', KEYS[p.i], ids)
  else
    redis.call('ZREMRANGEBYRANK', KEYS[p.i], '0', #ids - 1)
  end
  local hset, zadd, orphans = {}, {}, {}
  local seq = p.seq
  for j, id in ipairs(ids) do
    local body, retry, max, lvl, lasterr = bodies[j], 0, fresh[j], lvl0, ''
    if not max then
      local _
      _, retry, max, lvl, lasterr = parse_state(sts[j])
    end
    if body and max then
      seq = seq + 1
      local sseq = string.format('%d', seq)
      hset[#hset + 1] = id
      hset[#hset + 1] = sseq .. ',' .. string.format('%d', retry) .. ',' .. max .. ',' .. lvl .. ',' .. lasterr
      zadd[#zadd + 1] = sdeadline
      zadd[#zadd + 1] = id
      rows[#rows + 1] = id
      rows[#rows + 1] = seq
      rows[#rows + 1] = retry
      rows[#rows + 1] = tonumber(max)
      rows[#rows + 1] = lvl
      rows[#rows + 1] = body
      rows[#rows + 1] = deadline
      rows[#rows + 1] = lasterr
      leased[#leased + 1] = id
      dlvs[#dlvs + 1] = sseq
      emit(evk, evn, 'started', id, now, seq, retry)
      local b = grouped and jobgroup[id]
      if b and b.g ~= '' then
        b.s.taken = b.s.taken + 1
        b.lease = b.lease or {}
        b.lease[#b.lease + 1] = sdeadline
        b.lease[#b.lease + 1] = id
      end
    elseif body and not sts[j] then
      dead(id, 0, 0, lvl0, 'corrupt job: no state and no max_retries')
      note(1, 'job ' .. id .. ' has no state and its JSON does not end with max_retries; dead-lettered')
    elseif body then
      dead(id, 0, 0, lvl0, 'corrupt job state')
      note(2, 'state of ' .. id .. ' does not parse; job dead-lettered')
    else
      orphans[#orphans + 1] = id
      note(1, 'job ' .. id .. ' was queued without its JSON; dropped')
    end
  end
  batched('HSET', KEYS[2], hset)
  batched('ZADD', KEYS[6], zadd)
  batched('HDEL', KEYS[2], orphans)
  if #orphans > 0 and redis.call('TYPE', KEYS[14]).ok == 'hash' then
    batched('HDEL', KEYS[14], orphans)
  end
end
if #fids > 0 then
  -- flows of the jobs dead-lettered above (check() read the flows hash's
  -- type before they were)
  local kinds = {}
  for x = 1, #fids do
    kinds[x] = 'dead'
  end
  local fplan = flow_plan(KEYS[12], fids, kinds)
  if fplan then
    local d, tr = flow_apply(fplan, KEYS[12], {jobs = KEYS[1], state = KEYS[2], levels = lvkeys, dlq = KEYS[8], wake = KEYS[9]},
      now, tonumber(ARGV[3]), ARGV[4], evk, evn)
    deadn, trimmed = deadn + d, trimmed + tr
  end
end
add_counts(KEYS[7], {'total_dead_trimmed', trimmed, 'total_dead', deadn, 'total_failed', failed})
if failed > 0 then
  count_day(KEYS[13] .. day_of(now), 'failed', failed)
end
-- the limits count what was leased: the queue's window, each group's
-- lease set (expiring the longest lease after its last lease) and window
if lim and lim.r and #leased > 0 then
  redis.call('SET', KEYS[16], int_str(qwin) .. ',' .. int_str(qused + #leased), 'PX', int_str((qwin + 2) * lim.p - now))
end
-- the stats hash: the delivery sequence (2b), pick's round-robin and
-- the groups a whole read found, in one HSET
local upd = {}
if #plan > 0 then
  upd[#upd + 1], upd[#upd + 2] = 'delivery_seq', int_str(dseq)
end
if grouped and rr ~= rr0 then
  upd[#upd + 1], upd[#upd + 2] = 'group_rr', rr
end
if grouped and whole and #seen <= GROUP_SEEN_MAX then
  upd[#upd + 1], upd[#upd + 2] = 'group_seen', int_str(now) .. '|' .. table.concat(seen, ',')
end
if #upd > 0 then
  redis.call('HSET', KEYS[7], unpack(upd))
end
if grouped then
  for g, s in pairs(gs) do
    if s.gone then
      batched('ZREM', KEYS[17] .. g, s.gone)
    end
  end
  local seen = {}
  for _, b in pairs(jobgroup) do
    if b.lease and not seen[b] then
      seen[b] = true
      batched('ZADD', KEYS[17] .. b.g, b.lease)
      redis.call('PEXPIRE', KEYS[17] .. b.g, ARGV[7])
      if b.s.l.r then
        redis.call('SET', KEYS[18] .. b.g, int_str(b.s.win) .. ',' .. int_str(b.s.used + b.s.taken), 'PX',
          int_str((b.s.win + 2) * b.s.l.p - now))
      end
    end
  end
end
if paused then
  -- paused (Pause): nothing is delivered; the caller waits its longest
  -- wait, and Resume pushes a wake-up token.
  return {'ok', -1, rows, notes}
end

if #leased > 0 then
  if #leased >= n and not limited then
    -- more may be ready: wake another consumer
    if foreign then
      wake(KEYS[9])
    elseif not awake then
      redis.call('RPUSH', KEYS[9], '1')
    end
  end
  remember(KEYS[11], {'ok', leased, dlvs}, ARGV[5])
  return {'ok', -1, rows, notes}
end

-- 3. idle: the caller may now wait on the wake list. Enqueue checks the
-- wake list at the first enqueue of each millisecond (when enq_seq jumps
-- to it); if a job was enqueued in this one, move enq_seq (and
-- enq_skipped, keeping their difference) back before it, so that the
-- next enqueue of this millisecond checks too. Nothing is ready, so no
-- job of this millisecond is left to be ordered against it. (Both were
-- read, and enq_skipped checked, in 2b.)
if eskip then
  local d = eseq - now * 1000 + 2
  redis.call('HSET', KEYS[7], 'enq_skipped', int_str(eskip - d), 'enq_seq', int_str(eseq - d))
end

if limited or gheld then
  -- held back by a limit: wait until a rate window ends, or for a
  -- settle to free a place (it wakes a consumer: see settle.lua), at most
  -- the longest wait
  return {'ok', lwait or -1, rows, notes}
end

-- 4. how long until something is due?
local due = -1
for i = 3, 6 do
  local first = redis.call('ZRANGE', KEYS[i], '0', '0', 'WITHSCORES')
  if first[2] then
    local at = tonumber(first[2])
    if i < 6 then
      at = math.floor(at / 1000)
    end
    if due < 0 or at < due then
      due = at
    end
  end
end
if due >= 0 then
  due = math.max(due - now, 0)
end
return {'ok', due, rows, notes}
