-- lib.lua: the conversation library (after guard.lua and stats.lua), put
-- before every script that reads or changes a conversation or who handles
-- it: open, move, unassign, resolve, priority, append, read, reconcile,
-- add_admin, remove_admin and admins (those that hand conversations out
-- also get route.lua). All their keys carry the deployment's hash tag.
--
-- KEYS[1] chat:{tag}:conversations:state    HASH  conversation ID -> "band stamp waiting admin"
-- KEYS[2] chat:{tag}:conversations:active   ZSET  conversation ID -> last activity, Unix ms
-- KEYS[3] chat:{tag}:conversations:unread   ZSET  conversation ID -> score (see score)
-- KEYS[4] chat:{tag}:conversations:backlog  ZSET  conversation ID -> score
-- KEYS[5] chat:{tag}:admins                 HASH  admin ID -> capacity
-- KEYS[6] chat:{tag}:cursor                 HASH  stamp: last order stamp; last: admin of the last assignment
-- then four keys for each admin i of ARGV (i = 1..N), from KEYS[6 + 4(i-1) + 1]:
--   admin:{tag}:{admin_id}:presence        STRING availability (presence's): online, away, busy, offline
--   admin:{tag}:{admin_id}:assignments     SET    conversation IDs
--   chat:{tag}:admin:stats:{admin_id}      HASH   see stats.lua
--   chat:{tag}:admin:dashboard:{admin_id}  HASH   dashboard cache, deleted when its numbers change
-- then the operation's own keys, from KEYS[XK] (XK = 7 + 4N).
-- ARGV[1] N, the size of the roster the caller knows
-- ARGV[2] conversation TTL, ms
-- ARGV[3] strategy: 'least' or 'rr'
-- ARGV[4..7] channels: message, assigned, resolved, read
-- ARGV[8] request ID (16 hex digits), or ''
-- ARGV[9..8+N] the roster's admin IDs, sorted
-- then the operation's own arguments, from ARGV[XA] (XA = 9 + N).
--
-- A conversation is open while it has a state field; it is in exactly one
-- of: the backlog (admin ''), or one admin's assignments set (admin named
-- in the state). It expires TTL after its last activity (its score in
-- KEYS[2]): routing scripts drop up to PRUNE expired conversations per run
-- and any expired one they meet. Inconsistencies between these keys (a
-- member without a state, a state without its member) are repaired in
-- favour of the state; values that do not parse are corrupt.

local N = tonumber(ARGV[1])
local TTL = tonumber(ARGV[2])
local STRATEGY = ARGV[3]
local CH_MESSAGE, CH_ASSIGNED, CH_RESOLVED, CH_READ = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local REQ = ARGV[8]
local XK, XA = 7 + 4 * N, 9 + N
local BAND = 2251799813685248 -- 2^51
local now = now_ms()

local admins, index = {}, {}
for i = 1, N do
  admins[i] = ARGV[8 + i]
  index[admins[i]] = i
end

-- kq returns the KEYS index of admin i's key j: 1 availability,
-- 2 assignments, 3 stats, 4 dashboard.
local function kq(i, j) return 6 + 4 * (i - 1) + j end

local avail, cap, load, dirty = {}, {}, {}, {}
local all_dirty = false -- the total changed: every dashboard is stale
local last = nil        -- admin of the last assignment
local last_changed = false
local expired_n, requeued_n, assigned_n = 0, 0, 0
local surveyed = false  -- the roster was checked (route.lua's survey)

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

-- unscore returns the band and stamp of a score read from KEYS[i].
local function unscore(i, v)
  local n = tonumber(v)
  if not n or n < 0 or n >= 4 * BAND or n ~= math.floor(n) then
    bad(i, 'a score is not band x 2^51 + (2^51 - 1 - stamp)')
  end
  local b = math.floor(n / BAND)
  return b, BAND - 1 - (n - b * BAND)
end

-- next_stamp issues an order stamp: max(last + 1, now x 512), so stamps
-- strictly increase (FIFO) even within one millisecond, and keep
-- increasing after the cursor expired as long as server time does.
local stamp_last = nil
local function next_stamp()
  if stamp_last == nil then
    stamp_last = 0
    local v = rc(6, 'HGET', 'stamp')
    if v then
      stamp_last = to_int(v, 0, (now + SKEW) * 512)
      if not stamp_last then bad(6, 'stamp is not an order stamp (ms x 512 + n)') end
    end
  end
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
local function drop(conv, st, reason)
  if st.a ~= '' and not index[st.a] and not surveyed then stale() end
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
-- are removed.
local function live(conv)
  local st = get_state(conv)
  local act = rc(2, 'ZSCORE', conv)
  if not st then
    if act then
      rc(2, 'ZREM', conv)
      rc(3, 'ZREM', conv)
      rc(4, 'ZREM', conv)
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
-- prologue (begin, or a type check) and returns none() after done
-- (close, or finish) when conv is not open; otherwise nil and conv's
-- state.
local function enter(conv, prologue, done)
  local rep = replayed(XK)
  if rep then return ok(unpack(rep)) end
  prologue()
  local st = live(conv)
  if not st then
    done()
    return none()
  end
  return nil, st
end
