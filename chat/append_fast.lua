-- append_fast.lua: Append's common case, sent first, before the prelude
-- (call.Head): no closure of the prelude or lib.lua is made when it
-- returns. It uses no helper; whatever it does not recognise as its case
-- breaks out, before any write, to the rest of append's script (the
-- prelude, lib.lua, append.lua), which does the whole call again from the
-- start (and reports the corrupt key, the replay, the closed conversation
-- or the stale roster). Its code is one do block, so that its locals end
-- with it.
--
-- KEYS and ARGV: append.lua's (lib.lua's layout, then append's own):
--   KEYS[1..6]  chat:{tag}:conversations:state, :active, :unread and
--               :backlog, chat:{tag}:admins, chat:{tag}:cursor
--   KEYS[7..6+4N] four per roster admin: availability, assignments,
--               stats, dashboard
--   KEYS[XK]    (XK = 7 + 4N) the conversation's request memo
--   KEYS[XK+1]  the conversation's message cache
--   ARGV[1] N; ARGV[2] conversation TTL, ms; ARGV[4] the message channel;
--   ARGV[8] request ID; ARGV[12] REPLAY_MS; ARGV[15] SKEW, ms (the
--   others of ARGV[1..16] are unused here)
--   ARGV[17..16+N] the roster's admin IDs
--   ARGV[XA..XA+4] (XA = 17 + N) conversation ID, sender role, content,
--   sender ID, messages kept
-- Returns {'ok', message ID, server time ms}, as append.lua does, or
-- falls through.
--
-- The case: a user or system message (an admin's updates the day's
-- statistics: append.lua), a request ID, a request memo (lib.lua) that
-- is a sorted set without this request's ID, the conversation's state
-- "band stamp waiting admin" as lib.lua parses it, its activity an
-- integral score within TTL and not ahead of the clock by more than
-- SKEW, its admin ('' or one of the caller's roster), the newest cached
-- message one this package wrote (or none), the unread queue a sorted
-- set (and, for a user message not yet in it, the cursor's stamp an
-- order stamp), and no character that JSON escapes in the conversation
-- ID, the admin ID, the content or the sender ID. Each read doubles as
-- its key's type check (redis.pcall: a WRONGTYPE breaks out). It then
-- writes what append.lua writes, with the same commands' effects,
-- events, TTLs and reply: lib.lua's helpers written out (int_str as
-- '%d', the same digits for the whole numbers below 2^53 it formats;
-- rfc3339 with integer arithmetic; hex of a decimal as one gsub), and
-- LTRIM only when LPUSH made the list longer than kept.
--
-- Why a twin: its bench row, BenchmarkChatAppend/redschema, costs the
-- server 335k instructions per append with this head and 609k without
-- it (45 % less; callgrind, bench/README.md "Where a script's
-- instructions go", 2026-11-29): over the 20 % a twin must save.
do
local find, match, fmt = string.find, string.match, string.format
local N = tonumber(ARGV[1])
local XK, XA = 7 + 4 * N, 17 + N
local SKEW, REPLAY_MS, BAND = tonumber(ARGV[15]), tonumber(ARGV[12]), 2251799813685248
local conv, role, content, sender, keep = ARGV[XA], ARGV[XA + 1], ARGV[XA + 2], ARGV[XA + 3], ARGV[XA + 4]
local req, TTL = ARGV[8], tonumber(ARGV[2])
repeat
  if role == 'admin' or req == '' then break end
  local esc = '[%c"\\]'
  if find(conv, esc) or find(content, esc) or find(sender, esc) then break end
  local t = redis.call('TIME')
  local us = tonumber(t[2])
  local now = tonumber(t[1]) * 1000 + (us - us % 1000) / 1000

  -- The request memo: a sorted set (or none) without this request.
  if redis.pcall('ZSCORE', KEYS[XK], req) then break end

  -- The conversation: open, live, its admin in the caller's roster.
  local v = redis.pcall('HGET', KEYS[1], conv)
  if type(v) ~= 'string' then break end
  local b, ss, ws, a = match(v, '^([0-3]) (%d+) (%d+) (.*)$')
  if not b or #ss > 17 or #ws > 17 or find(a, esc) then break end
  local s, w = tonumber(ss), tonumber(ws)
  if s < 1 or s >= BAND or w > now + SKEW then break end
  local act = redis.pcall('ZSCORE', KEYS[2], conv)
  if type(act) ~= 'string' then break end
  act = tonumber(act)
  if not act or act % 1 ~= 0 or act > now + SKEW or act <= now - TTL then break end
  local i = nil
  if a ~= '' then
    for j = 1, N do
      if ARGV[16 + j] == a then
        i = j
        break
      end
    end
    if not i then break end
  end

  -- The next message ID.
  local id = 1
  local head = redis.pcall('LINDEX', KEYS[XK + 1], '0')
  if head then
    if type(head) ~= 'string' then break end
    local h = match(head, '^{"id":(%d+),')
    h = h and #h <= 17 and tonumber(h)
    if not h or h < 1 or h > 9007199254740991 then break end
    id = h + 1
  end

  -- The unread queue, and for a user message entering it, its stamp.
  local unread = redis.pcall('ZSCORE', KEYS[3], conv)
  if type(unread) == 'table' then break end
  local stamp = nil
  if role == 'user' and not unread then
    local c = redis.pcall('HGET', KEYS[6], 'stamp')
    if type(c) == 'table' then break end
    local last = 0
    if c then
      -- (The match alone first: miniredis's Lua leaves last unchanged
      -- when a match inside an 'a and b and c' chain finds nothing.)
      local d = match(c, '^%d+$')
      last = d and #d <= 17 and tonumber(d)
      if not last or last > (now + SKEW) * 512 then break end
    end
    stamp = now * 512
    if last + 1 > stamp then stamp = last + 1 end
    if stamp >= BAND then break end
  end

  -- Writes: nothing above wrote.
  local nows, ids = fmt('%d', now), fmt('%d', id)
  local sec = (now - now % 1000) / 1000
  local days = (sec - sec % 86400) / 86400
  local rem = sec - days * 86400
  local z = days + 719468
  local era = (z - z % 146097) / 146097
  local doe = z - era * 146097
  local yoe = doe - (doe - doe % 1460) / 1460 + (doe - doe % 36524) / 36524 - (doe - doe % 146096) / 146096
  yoe = (yoe - yoe % 365) / 365
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + (yoe - yoe % 4) / 4 - (yoe - yoe % 100) / 100)
  local mp = (5 * doy + 2 - (5 * doy + 2) % 153) / 153
  local d = doy - (153 * mp + 2 - (153 * mp + 2) % 5) / 5 + 1
  local m = mp + 3
  if mp >= 10 then m = mp - 9 end
  if m <= 2 then y = y + 1 end
  local ts = fmt('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d,
    (rem - rem % 3600) / 3600, (rem % 3600 - rem % 60) / 60, rem % 60, now % 1000)
  local msg
  if sender ~= '' then
    msg = '{"id":' .. ids .. ',"content":"' .. content .. '","sender_role":"' .. role ..
      '","sender_id":"' .. sender .. '","timestamp":"' .. ts .. '"}'
  else
    msg = '{"id":' .. ids .. ',"content":"' .. content .. '","sender_role":"' .. role ..
      '","timestamp":"' .. ts .. '"}'
  end
  local mk = KEYS[XK + 1]
  if redis.call('LPUSH', mk, msg) > tonumber(keep) then redis.call('LTRIM', mk, '0', keep - 1) end
  redis.call('PEXPIRE', mk, ARGV[2])
  redis.call('ZADD', KEYS[2], nows, conv)
  if stamp then
    redis.call('HSET', KEYS[6], 'stamp', fmt('%d', stamp))
    redis.call('ZADD', KEYS[3], fmt('%d', b * BAND + (BAND - 1 - stamp)), conv)
  end
  if role == 'user' and w == 0 then
    redis.call('HSET', KEYS[1], conv, b .. ' ' .. ss .. ' ' .. nows .. ' ' .. a)
  end
  if i then
    local k = 6 + 4 * (i - 1)
    redis.call('PEXPIRE', KEYS[k + 2], ARGV[2])
    if stamp then redis.call('DEL', KEYS[k + 4]) end
  end
  redis.call('PUBLISH', ARGV[4], '{"type":"message","conversation_id":"' .. conv .. '","admin_id":"' .. a ..
    '","previous":"","reason":"' .. role .. '","at":' .. nows .. ',"message":' .. msg .. '}')
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  redis.call('PEXPIRE', KEYS[6], ARGV[2])
  redis.call('ZADD', KEYS[XK], nows, req, nows,
    req .. '=' .. string.gsub(ids, '%d', '3%0') .. ',' .. string.gsub(nows, '%d', '3%0'))
  redis.call('ZREMRANGEBYSCORE', KEYS[XK], '-inf', fmt('(%d', now - REPLAY_MS))
  redis.call('PEXPIRE', KEYS[XK], ARGV[12])
  return {'ok', id, now}
until true
end
