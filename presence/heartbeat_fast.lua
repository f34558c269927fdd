-- heartbeat_fast.lua: the heartbeat of a live connection of a user who is
-- online, the common case, in as few commands as it takes. It is the
-- heartbeat's head (call.Head): it runs first, before the prelude and
-- lib.lua, uses none of their helpers and builds no table, so what it
-- returns costs no closure. Anything it does not recognise as its case
-- falls through, before a single write, to the general heartbeat
-- (heartbeat.lua, after the prelude and lib.lua), which handles it
-- exactly as before.
--
-- KEYS[1..4]  as lib.lua describes them (presence, connections, online
--             index shard, request memo)
-- ARGV[1..11] as lib.lua describes them (user, connection, format, TTL,
--             retention, events channel, index, layout, skew bound,
--             replay window, request ID); it reads ARGV[1..5] and
--             ARGV[7..9]
-- Returns, in its case, "ok <live> 0 <status>" ({'ok', live, 0, status} as one
-- string of words, as heartbeat.lua would return it as a table);
-- otherwise nothing: the general heartbeat runs.
--
-- A status's index score is the presence expiry plus its fraction
-- (online .0, away .25, busy .5) and the index TTL the TTL plus the sweep
-- window for online, 1 ms more for the others, as lib.lua writes them;
-- the score is passed as a decimal string (a Lua number would be
-- formatted by Redis as a double, the same value at twice the cost).
--
-- The case: the hash layout; every connection of the user a JSON text as
-- this package writes it ({"connectedAt":N,"lastSeen":N,...}) and live
-- (lastSeen within TTL, not ahead of the clock by more than the skew
-- bound), this one among them; the presence JSON as this package writes
-- it, with the status online, away or busy, a lastSeen not ahead of the
-- clock, the same connection count, and (FormatDetailed) the freshest
-- connection's device and an activity in plain characters. Then nothing
-- is pruned, nothing changes but the times, no event is due, and no
-- request memo is needed: the script writes the user's index score (no
-- prune: no member is added) and its TTL, the connection's lastSeen, the
-- presence (the same bytes but lastSeen, and the device of this
-- connection, now the freshest) with its TTL and the hash's TTL. The index
-- comes first: its ZADD fails the script on a shard of a foreign type
-- (WRONGTYPE) before anything is written, and the reads before it checked
-- the other keys.
--
-- Why a twin: its bench row, BenchmarkPresenceHeartbeat/redschema, costs
-- the server 153k instructions per heartbeat with this head and 337k
-- without it (55 % less; callgrind, bench/README.md "Where a script's
-- instructions go", 2026-11-29): over the 20 % a twin must save.
if ARGV[8] ~= 'single' then
  local find, sub, match = string.find, string.sub, string.match
  local FMT, TTL_PX = ARGV[3], ARGV[4]
  local TTL, SKEW_MS = tonumber(TTL_PX), tonumber(ARGV[9])
  local t = redis.call('TIME')
  local ms = sub('00000' .. t[2], -6, -4)
  local nows = t[1] .. ms
  local now = tonumber(nows)
  local conns = redis.call('HGETALL', KEYS[2])
  local conn = ARGV[2]
  local mine, at, digits, n = nil, 0, '', 0
  for i = 1, #conns, 2 do
    local v = conns[i + 1]
    local p = find(v, ',"lastSeen":', 1, true)
    local d = p and match(v, '^%d+', p + 12)
    local last = d and tonumber(d)
    if not last or now - last >= TTL or last > now + SKEW_MS then
      mine = nil
      break
    end
    n = n + 1
    if conns[i] == conn then mine, at, digits = v, p, d end
  end
  local raw = mine and redis.call('GET', KEYS[1])
  local st, value
  if raw and FMT == 'detailed' then
    local last, cnt, rest
    st, last, cnt, rest = match(raw, '^{"status":"(%l+)","lastSeen":(%d+),"activeConnections":(%d+),"metadata":{"device":"[^"\\%c]*"(.*)$')
    local q = find(mine, '"metadata":{"device":"', 1, true)
    local e = q and find(mine, '"', q + 22, true)
    local dev = e and sub(mine, q + 22, e - 1)
    if (st == 'online' or st == 'away' or st == 'busy') and tonumber(last) <= now + SKEW_MS and tonumber(cnt) == n and dev
        and not find(dev, '[%c\\]') and (rest == '}}' or match(rest or '', '^,"lastActivity":"[^"\\%c]*"}}$')) then
      value = '{"status":"' .. st .. '","lastSeen":' .. nows .. ',"activeConnections":' .. cnt ..
        ',"metadata":{"device":"' .. dev .. '"' .. rest
    end
  elseif raw then
    local user, last
    user, st, last = match(raw, '^{"userId":"([^"\\%c]*)","status":"(%l+)","lastSeen":(%d+)}$')
    if user == ARGV[1] and (st == 'online' or st == 'away' or st == 'busy') and tonumber(last) <= now + SKEW_MS then
      value = '{"userId":"' .. user .. '","status":"' .. st .. '","lastSeen":' .. nows .. '}'
    end
  end
  if value then
    if ARGV[7] == '1' then
      local score = string.format('%d', now + TTL)
      local window = tonumber(ARGV[5]) -- the sweep window: the retention, or the TTL
      if window == 0 then window = TTL end
      if st == 'online' then
        redis.call('ZADD', KEYS[3], score, ARGV[1])
        redis.call('PEXPIRE', KEYS[3], string.format('%d', TTL + window))
      else
        redis.call('ZADD', KEYS[3], score .. (st == 'away' and '.25' or '.5'), ARGV[1])
        redis.call('PEXPIRE', KEYS[3], string.format('%d', TTL + window + 1))
      end
    end
    redis.call('HSET', KEYS[2], conn, sub(mine, 1, at + 11) .. nows .. sub(mine, at + 12 + #digits))
    redis.call('SET', KEYS[1], value, 'PX', TTL_PX)
    redis.call('PEXPIRE', KEYS[2], TTL_PX)
    return 'ok ' .. n .. ' 0 ' .. st -- {'ok', n, 0, st} as words: no table to build (n is a small count)
  end
end
