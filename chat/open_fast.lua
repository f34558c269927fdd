-- open_fast.lua: Open's common case, sent first, before the prelude
-- (call.Head): no closure of the prelude or lib.lua is made when it
-- returns. It uses no helper; whatever it does not recognise as its case
-- breaks out, before any write, to the rest of open's script (the
-- prelude, lib.lua, open.lua), which does the whole call again from the
-- start (and reports the corrupt key, the replay, the stale roster, or
-- queues the conversation). Its code is one do block, so that its locals
-- end with it.
--
-- KEYS and ARGV: open.lua's (lib.lua's layout, then open's own):
--   KEYS[1..6]  chat:{tag}:conversations:state, :active, :unread and
--               :backlog, chat:{tag}:admins, chat:{tag}:cursor
--   KEYS[7..6+4N] four per roster admin: availability, assignments,
--               stats, dashboard
--   KEYS[XK]    (XK = 7 + 4N) the conversation's request memo
--   ARGV[1] N; ARGV[2] conversation TTL, ms; ARGV[3] strategy; ARGV[5]
--   the assigned channel; ARGV[8] request ID; ARGV[10] MAX_CAPACITY;
--   ARGV[11] AVAIL_MS (negative: WithoutTag); ARGV[12] REPLAY_MS;
--   ARGV[13] PRUNE; ARGV[15] SKEW, ms (the others of ARGV[1..16] are
--   unused here)
--   ARGV[17..16+N] the roster's admin IDs
--   ARGV[XA], ARGV[XA+1] (XA = 17 + N) conversation ID, priority band
-- Returns 'ok <admin> 1' (or {'ok', admin, 1} for an admin ID with a
-- space), as open.lua does, or falls through.
--
-- The case: a request ID, a request memo (lib.lua) that is a sorted set
-- without this request's ID, a conversation without a state (not open),
-- an empty backlog, the unread queue a sorted set, the caller's roster
-- (as many admins, each capacity an integer in [1, MAX_CAPACITY]), each
-- availability one of presence's four words with a TTL no longer than
-- AVAIL_MS (or none, for WithoutTag), no admin offline or expired who
-- still holds conversations (they would be requeued), no more members in
-- an assignments set than any capacity, the cursor's stamp an order
-- stamp, no expired conversation in the active set, an online admin with
-- room, and no character that JSON escapes in the conversation ID or the
-- chosen admin's ID. Each read doubles as its key's type check
-- (redis.pcall: a WRONGTYPE breaks out). It then hands the conversation
-- to the admin lib.lua's pick chooses and writes what open.lua writes in
-- that case, with the same effects, events, TTLs, memo and reply, in
-- fewer commands: the cursor's two fields in one HMGET and one HSET,
-- no HLEN of the states (the HGET of this conversation's state checks
-- the type), no ZSCORE of the active set (ZADD's reply says whether a
-- member without a state was there: then it leaves unread too), and no
-- PEXPIRE of the unread queue or the backlog when they are empty (no key).
--
-- Why a twin: its bench row, BenchmarkChatAssign/redschema, costs the
-- server 436k instructions per Open with this head and 701k without it
-- (38 % less; callgrind, bench/README.md, 2026-11-30): over the 20 % a
-- twin must save.
do
local find, match, fmt = string.find, string.match, string.format
local N = tonumber(ARGV[1])
local XK, XA = 7 + 4 * N, 17 + N
local conv, band, req = ARGV[XA], ARGV[XA + 1], ARGV[8]
-- uint parses a decimal of at most 17 digits (lib.lua's to_int), or nil.
local function uint(s)
  if type(s) ~= 'string' or #s > 17 then return nil end
  local d = match(s, '^%d+$')
  return d and tonumber(d)
end
repeat
  if req == '' or N == 0 then break end
  local esc = '[%c"\\]'
  if find(conv, esc) then break end
  local t = redis.call('TIME')
  local us = tonumber(t[2])
  local now = tonumber(t[1]) * 1000 + (us - us % 1000) / 1000
  local TTL, SKEW, MAXC = tonumber(ARGV[2]), tonumber(ARGV[15]), tonumber(ARGV[10])
  local AVAIL_MS = tonumber(ARGV[11])
  local any = AVAIL_MS < 0
  if any then AVAIL_MS = -AVAIL_MS end

  -- The request memo, the conversation (not open), the queues.
  if redis.pcall('ZSCORE', KEYS[XK], req) then break end
  if redis.pcall('HGET', KEYS[1], conv) then break end
  local unread = redis.pcall('ZCARD', KEYS[3])
  if type(unread) ~= 'number' then break end
  if redis.pcall('ZCARD', KEYS[4]) ~= 0 then break end

  -- The roster, availability and loads (lib.lua's survey).
  if redis.pcall('HLEN', KEYS[5]) ~= N then break end
  local caps = redis.pcall('HMGET', KEYS[5], unpack(ARGV, 17, 16 + N))
  if caps.err then break end
  local cap, avail, load, ok = {}, {}, {}, true
  for i = 1, N do
    local c = uint(caps[i])
    if not c or c < 1 or c > MAXC then ok = false break end
    cap[i] = c
    local k = 6 + 4 * (i - 1)
    local v = redis.pcall('GET', KEYS[k + 1])
    if v then
      if v ~= 'online' and v ~= 'away' and v ~= 'busy' and v ~= 'offline' then ok = false break end
      local left = redis.pcall('PTTL', KEYS[k + 1])
      if (left < 0 and not (any and left == -1)) or left > AVAIL_MS then ok = false break end
    end
    avail[i] = v or 'offline'
    local n = redis.pcall('SCARD', KEYS[k + 2])
    if type(n) ~= 'number' or n > MAXC or (n > 0 and avail[i] == 'offline') then ok = false break end
    load[i] = n
  end
  if not ok then break end

  -- The cursor: the last assignment's admin and the order stamp.
  local cur = redis.pcall('HMGET', KEYS[6], 'last', 'stamp')
  if cur.err then break end
  local last = 0
  if cur[1] then
    for j = 1, N do
      if ARGV[16 + j] == cur[1] then
        last = j
        break
      end
    end
  end
  local sl = 0
  if cur[2] then
    sl = uint(cur[2])
    if not sl or sl > (now + SKEW) * 512 then break end
  end
  local stamp = now * 512
  if sl + 1 > stamp then stamp = sl + 1 end
  if stamp >= 2251799813685248 then break end

  -- Nothing to prune.
  local old = redis.pcall('ZRANGEBYSCORE', KEYS[2], '-inf', fmt('%d', now - TTL), 'LIMIT', '0', ARGV[13])
  if old.err or #old > 0 then break end

  -- lib.lua's pick.
  local best = nil
  for k = 1, N do
    local i = (last + k - 1) % N + 1
    if avail[i] == 'online' and load[i] < cap[i] then
      if ARGV[3] == 'rr' then
        best = i
        break
      end
      if not best or load[i] < load[best] then best = i end
    end
  end
  if not best then break end
  local a = ARGV[16 + best]
  if find(a, esc) then break end

  -- Writes: nothing above wrote.
  local nows = fmt('%d', now)
  if redis.call('ZADD', KEYS[2], nows, conv) == 0 and unread > 0 then
    redis.call('ZREM', KEYS[3], conv) -- a member without a state
  end
  local ev = '{"type":"assigned","conversation_id":"' .. conv .. '","admin_id":"'
  redis.call('PUBLISH', ARGV[5], ev .. '","previous":"","reason":"opened","at":' .. nows .. '}')
  local k = 6 + 4 * (best - 1)
  redis.call('SADD', KEYS[k + 2], conv)
  redis.call('PEXPIRE', KEYS[k + 2], ARGV[2])
  redis.call('HSET', KEYS[1], conv, band .. ' ' .. fmt('%d', stamp) .. ' 0 ' .. a)
  redis.call('PUBLISH', ARGV[5], ev .. a .. '","previous":"","reason":"backlog","at":' .. nows .. '}')
  local dash = {}
  for i = 1, N do dash[i] = KEYS[6 + 4 * i] end
  redis.call('DEL', unpack(dash))
  redis.call('HSET', KEYS[6], 'stamp', fmt('%d', stamp), 'last', a)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  if unread > 0 then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
  redis.call('PEXPIRE', KEYS[6], ARGV[2])
  redis.call('ZADD', KEYS[XK], nows, req, nows,
    req .. '=' .. string.gsub(a, '.', function(c) return fmt('%02x', string.byte(c)) end) .. ',31')
  redis.call('ZREMRANGEBYSCORE', KEYS[XK], '-inf', fmt('(%d', now - tonumber(ARGV[12])))
  redis.call('PEXPIRE', KEYS[XK], ARGV[12])
  if find(a, ' ', 1, true) then return {'ok', a, 1} end
  return 'ok ' .. a .. ' 1'
until true
end
