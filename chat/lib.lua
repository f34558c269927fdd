-- lib.lua: the chat package's library, sent after the prelude and
-- before every chat script (call.Uses). It defines helpers and no key;
-- its only code that runs by itself declares them. Read scripts
-- (dashboard, messages, queue, conversation) use its guard (rc, bad,
-- guarded) and read_stats; the conversation scripts (open, move,
-- unassign, resolve, priority, append, read, reconcile, add_admin,
-- remove_admin, admins) call setup() first, which reads the layout
-- below, and use the rest. All their keys carry the deployment's hash
-- tag.
--
-- The conversation scripts' layout:
-- KEYS[1] chat:{tag}:conversations:state    HASH  conversation ID -> "band stamp waiting admin"
-- KEYS[2] chat:{tag}:conversations:active   ZSET  conversation ID -> last activity, Unix ms
-- KEYS[3] chat:{tag}:conversations:unread   ZSET  conversation ID -> score (see score)
-- KEYS[4] chat:{tag}:conversations:backlog  ZSET  conversation ID -> score
-- KEYS[5] chat:{tag}:admins                 HASH  the roster: admin ID -> capacity
-- KEYS[6] chat:{tag}:cursor                 HASH  stamp: last order stamp; last: admin of the last assignment
-- then four keys for each admin i of ARGV (i = 1..N), from KEYS[6 + 4(i-1) + 1]:
--   admin:{tag}:{admin_id}:presence        STRING availability (presence's): online, away, busy, offline
--   admin:{tag}:{admin_id}:assignments     SET    conversation IDs
--   chat:{tag}:admin:stats:{admin_id}      HASH   see read_stats
--   chat:{tag}:admin:dashboard:{admin_id}  HASH   dashboard cache, deleted when its numbers change
-- then the operation's own keys, from KEYS[XK] (XK = 7 + 4N).
-- ARGV[1]  N, the size of the roster the caller knows
-- ARGV[2]  conversation TTL, ms
-- ARGV[3]  strategy: 'least' or 'rr'
-- ARGV[4..7] channels: message, assigned, resolved, read
-- ARGV[8]  request ID (16 hex digits), or ''
-- ARGV[9]  MAX_ADMINS, the most admins a roster holds
-- ARGV[10] MAX_CAPACITY, the largest capacity
-- ARGV[11] AVAIL_MS, the longest availability TTL (presence's), ms;
--          negative (-AVAIL_MS) when a key without a TTL is another
--          writer's word (WithoutTag), not corrupt
-- ARGV[12] REPLAY_MS, how long a request is remembered, ms
-- ARGV[13] PRUNE, expired conversations one routing call drops besides
--          those it meets
-- ARGV[14] DRAIN, the most backlog conversations one call hands out
-- ARGV[15] SKEW, how far ahead of server time a stored time may be, ms
-- ARGV[16] STATS_MS, an admin's stats hash's TTL, ms
-- ARGV[17..16+N] the roster's admin IDs, sorted
-- then the operation's own arguments, from ARGV[XA] (XA = 17 + N).
--
-- A conversation is open while it has a state field; it is in exactly one
-- of: the backlog (admin ''), or one admin's assignments set (admin named
-- in the state). It expires TTL after its last activity (its score in
-- KEYS[2]): routing scripts drop up to PRUNE expired conversations per run
-- and any expired one they meet. Inconsistencies between these keys (a
-- member without a state, a state without its member) are repaired in
-- favour of the state; values that do not parse are corrupt.

-- The conversation scripts' values (setup reads them) and state.
local N, TTL, STRATEGY, CH_MESSAGE, CH_ASSIGNED, CH_RESOLVED, CH_READ, REQ, XK, XA
local MAX_ADMINS, MAX_CAPACITY, AVAIL_MS, REPLAY_MS, PRUNE, DRAIN, SKEW, STATS_MS
local AVAIL_ANY -- an availability without a TTL is another writer's (ARGV[11] < 0)
local BAND = 2251799813685248 -- 2^51
local now
local admins, index = {}, {}
local avail, cap, load, dirty = {}, {}, {}, {}
local all_dirty = false -- the total changed: every dashboard is stale
local last = nil        -- admin of the last assignment
local last_changed = false
local expired_n, requeued_n, assigned_n = 0, 0, 0
local surveyed = false  -- the roster was checked (survey)

-- setup reads a conversation script's ARGV (the layout above) and the
-- server time.
local function setup()
  N, TTL, STRATEGY = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
  CH_MESSAGE, CH_ASSIGNED, CH_RESOLVED, CH_READ = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
  REQ = ARGV[8]
  MAX_ADMINS, MAX_CAPACITY, AVAIL_MS, REPLAY_MS = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
  AVAIL_ANY = AVAIL_MS < 0
  if AVAIL_ANY then AVAIL_MS = -AVAIL_MS end
  PRUNE, DRAIN, SKEW, STATS_MS = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16])
  XK, XA = 7 + 4 * N, 17 + N
  now = now_ms()
  for i = 1, N do
    admins[i] = ARGV[16 + i]
    index[admins[i]] = i
  end
end

-- The guard turns data this package did not write into {'corrupt', i, why}
-- naming KEYS[i], wherever in a script it is found, and the routing
-- scripts' stale roster into {'conflict', 'roster', admin IDs}.
--
-- rc(i, cmd, ...) runs cmd on KEYS[i]; a WRONGTYPE reply (KEYS[i] holds
-- another type) ends the script with {'corrupt', i, ...}. bad(i, why) ends it
-- with {'corrupt', i, why}. A script's body runs inside guarded(f), which
-- turns those endings into replies. Scripts check every key's type, and
-- the values their own change is made of (the cursor's stamp, the
-- roster's capacities and availabilities, the conversation's state and
-- activity, the admin's stats), before their first write, so such an
-- ending leaves nothing half written: a routing script reads them between
-- begin and tidy (below). The helpers that handle conversations one by
-- one (live's drop of an expired one, prune, requeue, drain) are the
-- exception: corrupt data they meet in a conversation ends the script
-- after the conversations they already dropped or moved.

local CORRUPT, STALE = {}, {}

local function bad(i, why) error({CORRUPT, i, why}) end

local function rc(i, cmd, ...)
  local r = redis.pcall(cmd, KEYS[i], ...)
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'WRONGTYPE', 1, true) then
      bad(i, 'holds another type than this package writes')
    end
    error(r, 0)
  end
  return r
end

-- stale ends a routing script whose roster is not the deployment's.
local function stale() error({STALE}) end

-- guarded runs f and returns its reply, {'corrupt', i, why} after bad, or
-- {'conflict', 'roster', the roster's admin IDs} after stale (KEYS[5] is the
-- roster in the scripts that call stale).
local function guarded(f)
  local okk, r = pcall(f)
  if okk then return r end
  if type(r) == 'table' then
    if r[1] == CORRUPT then return {'corrupt', r[2], r[3]} end
    if r[1] == STALE then
      if redis.call('HLEN', KEYS[5]) > MAX_ADMINS then
        return {'corrupt', 5, 'more than ' .. MAX_ADMINS .. ' admins'}
      end
      return {'conflict', 'roster', redis.call('HKEYS', KEYS[5])}
    end
  end
  error(r, 0)
end

-- An admin's numbers of the current UTC day, in
-- chat:{tag}:admin:stats:{admin_id} (HASH): day (days since the Unix
-- epoch), resolved (conversations resolved that day), rt_sum (ms of
-- response times) and rt_n (responses timed). A day other than today
-- counts as zeros; the next write starts the new day.

-- read_stats returns KEYS[k]'s numbers of today (server time now, ms).
local function read_stats(k, now)
  local v = rc(k, 'HMGET', 'day', 'resolved', 'rt_sum', 'rt_n')
  local today = math.floor(now / 86400000)
  local s = {k = k, today = today, resolved = 0, rt_sum = 0, rt_n = 0}
  if v[1] then
    local d = to_int(v[1], 0, today + 1)
    if not d then bad(k, 'day is not a UTC day number') end
    if d == today then
      s.resolved, s.rt_sum, s.rt_n = to_int(v[2], 0), to_int(v[3], 0), to_int(v[4], 0)
      if not s.resolved or not s.rt_sum or not s.rt_n then
        bad(k, 'resolved, rt_sum or rt_n is not a count')
      end
    end
  end
  return s
end

-- save_stats writes s back and keeps the hash STATS_MS.
local function save_stats(s)
  rc(s.k, 'HSET', 'day', int_str(s.today), 'resolved', int_str(s.resolved),
    'rt_sum', int_str(s.rt_sum), 'rt_n', int_str(s.rt_n))
  redis.call('PEXPIRE', KEYS[s.k], STATS_MS)
end

-- kq returns the KEYS index of admin i's key j: 1 availability,
-- 2 assignments, 3 stats, 4 dashboard.
local function kq(i, j) return 6 + 4 * (i - 1) + j end

-- typed checks the types of shared keys (indices) before any write, and
-- notes their sizes in card.
local card = {}
local function typed(...)
  for _, k in ipairs({...}) do
    if k == 2 or k == 3 or k == 4 then card[k] = rc(k, 'ZCARD') else card[k] = rc(k, 'HLEN') end
  end
end

-- The state of a conversation: band (0 low .. 3 urgent), s (order stamp
-- of its arrival, for the backlog), w (awaiting an admin reply since, ms,
-- or 0) and a (admin, '' in the backlog).
local function get_state(id)
  local v = rc(1, 'HGET', id)
  if not v then return nil end
  local b, s, w, a = string.match(v, '^([0-3]) (%d+) (%d+) (.*)$')
  s, w = to_int(s, 1, BAND - 1), to_int(w, 0, now + SKEW)
  if not b or not s or not w then
    bad(1, 'a conversation state is not "band stamp waiting admin"')
  end
  return {b = tonumber(b), s = s, w = w, a = a}
end

local function put_state(id, st)
  rc(1, 'HSET', id, st.b .. ' ' .. int_str(st.s) .. ' ' .. int_str(st.w) .. ' ' .. st.a)
end

-- score is a queue member's score: band x 2^51 + (2^51 - 1 - stamp), an
-- integer below 2^53 (exact in a double), higher for more urgent and,
-- within a band, for older.
local function score(b, s) return int_str(b * BAND + (BAND - 1 - s)) end

-- read_stamp reads and checks the cursor's last order stamp, once
-- (survey reads the field with the last admin: stamp_raw, false when
-- there is none), so that a script can check it before its first write.
local stamp_last, stamp_raw = nil, nil
local function read_stamp()
  if stamp_last ~= nil then return end
  local v = stamp_raw
  if v == nil then v = rc(6, 'HGET', 'stamp') end
  stamp_last = 0
  if v then
    stamp_last = to_int(v, 0, (now + SKEW) * 512)
    if not stamp_last then bad(6, 'stamp is not an order stamp (ms x 512 + n)') end
  end
end

-- next_stamp issues an order stamp: max(last + 1, now x 512), so stamps
-- strictly increase (FIFO) even within one millisecond, and keep
-- increasing after the cursor expired as long as server time does.
local function next_stamp()
  read_stamp()
  local s = now * 512
  if stamp_last + 1 > s then s = stamp_last + 1 end
  if s >= BAND then bad(6, 'order stamps exhausted') end
  stamp_last = s
  rc(6, 'HSET', 'stamp', int_str(s))
  return s
end

-- event publishes one event on channel ch.
local function event(ch, kind, conv, admin, prev, reason, extra)
  redis.call('PUBLISH', ch, '{"type":"' .. kind .. '","conversation_id":' .. json_str(conv) ..
    ',"admin_id":' .. json_str(admin) .. ',"previous":' .. json_str(prev) ..
    ',"reason":"' .. reason .. '","at":' .. int_str(now) .. (extra or '') .. '}')
end

-- release takes conv off its admin's set (the state is written by the
-- caller).
local function release(conv, st)
  if st.a == '' then return end
  local i = index[st.a]
  if i then
    rc(kq(i, 2), 'SREM', conv)
    if load[i] then load[i] = load[i] - 1 end
    dirty[i] = true
  end
  st.a = ''
end

-- drop closes conv everywhere. Its admin's set must be in KEYS: a script
-- that has not checked the roster asks for it first (the conversation
-- would stay counted in that admin's set); after the check, an admin
-- outside the roster is foreign data, and only the state is dropped.
-- The backlog's type is checked first where the script has not (append
-- and read, which otherwise only keep its TTL): release's SREM is then
-- the first write, and the first command on a key not yet checked.
local function drop(conv, st, reason)
  if st.a ~= '' and not index[st.a] and not surveyed then stale() end
  if not card[4] then typed(4) end
  local prev = st.a
  release(conv, st)
  rc(1, 'HDEL', conv)
  rc(2, 'ZREM', conv)
  rc(3, 'ZREM', conv)
  rc(4, 'ZREM', conv)
  all_dirty = true
  event(CH_RESOLVED, 'resolved', conv, prev, '', reason)
end

-- live returns conv's state and last activity while it is open; an
-- expired conversation is dropped, and queue members without a state
-- are removed (the backlog first: append and read have not checked its
-- type, and a WRONGTYPE there ends the script before the other two).
local function live(conv)
  local st = get_state(conv)
  local act = rc(2, 'ZSCORE', conv)
  if not st then
    if act then
      rc(4, 'ZREM', conv)
      rc(2, 'ZREM', conv)
      rc(3, 'ZREM', conv)
    end
    return nil
  end
  local t = nil
  if act then
    t = score_ms(act, 0, now + SKEW)
    if not t then bad(2, 'a score is not a time in Unix ms') end
  end
  if not t or t <= now - TTL then
    drop(conv, st, 'expired')
    expired_n = expired_n + 1
    return nil
  end
  return st, t
end

-- finish drops stale dashboards, records the round-robin cursor and
-- keeps the shared keys for TTL after this write.
local function finish()
  local stale_dash = {}
  for i = 1, N do
    if all_dirty or dirty[i] then stale_dash[#stale_dash + 1] = KEYS[kq(i, 4)] end
  end
  if #stale_dash > 0 then redis.call('DEL', unpack(stale_dash)) end -- at most MAX_ADMINS
  if last_changed then rc(6, 'HSET', 'last', admins[last]) end
  for _, k in ipairs({1, 2, 3, 4, 6}) do redis.call('PEXPIRE', KEYS[k], TTL) end
end

-- need returns the index of admin id, ending the script with a roster
-- conflict when the caller's roster lacks them.
local function need(id)
  local i = index[id]
  if not i then stale() end
  return i
end

-- The request memo: go-redis resends a command whose reply was lost, so
-- one request can run twice. The first run of a request that changed
-- something records it in the conversation's request set (KEYS[i]) at
-- its server time (ms), as two members with that score: the request ID,
-- and "<request ID>=<hex>,<hex>,..." (its reply, each field
-- hex-encoded). A second run finds the ID, reads the reply beside it and
-- returns it unchanged. Each record drops the members older than
-- REPLAY_MS and keeps the set for REPLAY_MS, so a resend is recognised
-- for REPLAY_MS after the first run however many other requests ran on
-- the conversation meanwhile; the set holds the requests of the last
-- REPLAY_MS.
local function hex(s)
  return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
end

local function unhex(h)
  return (string.gsub(h, '%x%x', function(x) return string.char(tonumber(x, 16)) end))
end

local function replayed(i)
  if REQ == '' then return nil end
  local at = rc(i, 'ZSCORE', REQ)
  if not at then return nil end
  local pre, body = REQ .. '=', nil
  for _, m in ipairs(rc(i, 'ZRANGEBYSCORE', at, at)) do
    if string.sub(m, 1, #pre) == pre then
      body = string.sub(m, #pre + 1)
      break
    end
  end
  if not body or not string.match(body, '^[%x,]*$') then
    bad(i, 'a request ID without its "<ID>=<hex fields>" reply')
  end
  local rep = {}
  for f in string.gmatch(body .. ',', '(%x*),') do rep[#rep + 1] = unhex(f) end
  return rep
end

local function remember(i, rep)
  if REQ == '' then return rep end
  local parts = {}
  for j = 1, #rep do
    local x = rep[j]
    if type(x) == 'number' then x = int_str(x) end
    parts[j] = hex(x)
  end
  local t = int_str(now)
  rc(i, 'ZADD', t, REQ, t, REQ .. '=' .. table.concat(parts, ','))
  rc(i, 'ZREMRANGEBYSCORE', '-inf', '(' .. int_str(now - REPLAY_MS))
  redis.call('PEXPIRE', KEYS[i], REPLAY_MS)
  return rep
end

-- enter starts a script about one open conversation, conv: it returns
-- the replay of a request that already ran (its first reply), or runs
-- prologue (begin, or a type check), reads conv (live) and, while it is
-- open, check(st) (the script's own reads), all before any write but
-- live's drop of conv; a routing script (prologue begin) then tidies.
-- It returns {'none'} after done (close, or finish) when conv is not
-- open; otherwise nil and conv's state.
local tidy
local function enter(conv, prologue, done, check)
  local rep = replayed(XK)
  if rep then return {'ok', unpack(rep)} end
  prologue()
  local st = live(conv)
  if st and check then check(st) end
  if surveyed then tidy(conv, st) end
  if not st then
    done()
    return {'none'}
  end
  return nil, st
end

-- Routing: the scripts that check the roster and hand conversations out
-- (open, move, unassign, resolve, reconcile, add_admin, remove_admin and
-- admins).

-- survey checks that the roster is the caller's (else the script ends
-- with {'conflict', 'roster', ...}) and reads each admin's capacity,
-- availability (an expired key is offline) and load. With add (an index),
-- it checks the roster as it will be once admin add has capacity add_cap
-- (AddAdmin, which writes that only after the survey), whether or not the
-- roster holds them yet.
local function survey(add, add_cap)
  local size = rc(5, 'HLEN')
  if not add and size ~= N then stale() end
  local caps = N > 0 and redis.call('HMGET', KEYS[5], unpack(admins)) or {}
  if add then
    if not caps[add] then size = size + 1 end
    if size ~= N then stale() end
    caps[add] = add_cap
  end
  for i = 1, N do
    local c = caps[i]
    if not c then stale() end
    cap[i] = to_int(c, 1, MAX_CAPACITY)
    if not cap[i] then bad(5, 'a capacity is not an integer in [1, ' .. MAX_CAPACITY .. ']') end
    local k = kq(i, 1)
    local v = rc(k, 'GET')
    if v then
      if v ~= 'online' and v ~= 'away' and v ~= 'busy' and v ~= 'offline' then
        bad(k, 'not online, away, busy or offline')
      end
      local left = redis.call('PTTL', KEYS[k])
      if (left < 0 and not (AVAIL_ANY and left == -1)) or left > AVAIL_MS then
        bad(k, 'no TTL, or a longer one than availability is kept')
      end
    end
    avail[i] = v or 'offline'
    load[i] = rc(kq(i, 2), 'SCARD')
    if load[i] > MAX_CAPACITY then bad(kq(i, 2), 'more members than any capacity') end
  end
  local cur = rc(6, 'HMGET', 'last', 'stamp')
  if cur[1] then last = index[cur[1]] end
  stamp_raw = cur[2]
  surveyed = true
end

-- give assigns conv (state st, admin '') to admin i, taking it out of
-- the backlog unless unqueued (it is not there).
local function give(conv, st, i, reason, prev, unqueued)
  local k = kq(i, 2)
  rc(k, 'SADD', conv)
  redis.call('PEXPIRE', KEYS[k], TTL)
  if not unqueued then rc(4, 'ZREM', conv) end
  st.a = admins[i]
  put_state(conv, st)
  load[i] = load[i] + 1
  dirty[i] = true
  last, last_changed = i, true
  event(CH_ASSIGNED, 'assigned', conv, admins[i], prev, reason)
end

-- enqueue puts conv (state st, admin '') in the backlog at its arrival.
local function enqueue(conv, st, prev, reason)
  rc(4, 'ZADD', score(st.b, st.s), conv)
  put_state(conv, st)
  event(CH_ASSIGNED, 'assigned', conv, '', prev, reason)
end

-- prune drops up to PRUNE conversations whose last activity is TTL old.
local function prune()
  local old = rc(2, 'ZRANGEBYSCORE', '-inf', int_str(now - TTL), 'LIMIT', 0, PRUNE)
  for _, conv in ipairs(old) do
    live(conv)
  end
end

-- requeue moves every conversation of admin i back to the backlog
-- (noted in requeued).
local requeued = {}
local function requeue(i, reason)
  local k = kq(i, 2)
  for _, conv in ipairs(rc(k, 'SMEMBERS')) do
    local st = get_state(conv)
    if st and st.a == admins[i] then
      st.a = ''
      enqueue(conv, st, admins[i], reason)
      requeued[conv] = true
      requeued_n = requeued_n + 1
    end
  end
  redis.call('DEL', KEYS[k])
  load[i] = 0
  dirty[i] = true
end

-- requeue_offline requeues the conversations of every admin whose
-- availability is offline or expired.
local function requeue_offline()
  for i = 1, N do
    if avail[i] == 'offline' and load[i] > 0 then requeue(i, 'offline') end
  end
end

-- pick returns the admin the next conversation goes to (never skip), or
-- nil when no online admin has room.
local function pick(skip)
  local best = nil
  local start = last or 0
  for k = 1, N do
    local i = (start + k - 1) % N + 1
    if i ~= skip and avail[i] == 'online' and load[i] < cap[i] then
      if STRATEGY == 'rr' then return i end
      if not best or load[i] < load[best] then best = i end
    end
  end
  return best
end

-- drain hands the backlog out, most urgent and oldest first, while an
-- online admin has room, at most DRAIN conversations per run; conv
-- skip_conv does not go to admin skip_admin (an Unassign's own).
local function drain(skip_conv, skip_admin)
  local pos, steps = 0, 0
  while assigned_n < DRAIN and steps < 2 * DRAIN and pick(nil) do
    steps = steps + 1
    local conv = rc(4, 'ZREVRANGE', pos, pos)[1]
    if not conv then return end
    local st = live(conv)
    if not st or st.a ~= '' then
      rc(4, 'ZREM', conv) -- gone, or assigned: the state wins
    else
      local i = pick(conv == skip_conv and skip_admin or nil)
      if i then
        give(conv, st, i, 'backlog', '')
        assigned_n = assigned_n + 1
      elseif conv == skip_conv then
        pos = pos + 1
      else
        return
      end
    end
  end
end

-- begin, tidy and close frame the scripts that route. begin checks the
-- keys' types and the roster (with add and add_cap, as survey) and
-- writes nothing (survey reads the cursor, live or prune the active set:
-- their type checks); the script then reads and checks what its own
-- change depends on (enter: the conversation's state and activity), and
-- tidy drops expired conversations and requeues offline admins' ones
-- (conv's state st, if given, follows); close drains the backlog and
-- finishes.
local function begin(add, add_cap)
  typed(1, 3, 4)
  survey(add, add_cap)
end

tidy = function(conv, st)
  prune()
  requeue_offline()
  if st and requeued[conv] then st.a = '' end
end

local function close(skip_conv, skip_admin)
  drain(skip_conv, skip_admin)
  finish()
end
