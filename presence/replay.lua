-- replay.lua: the presence package's request memos, put before the
-- scripts whose outcome depends on the state they find (connect,
-- disconnect, update, heartbeat, sweep, typing_start, typing_stop,
-- channel_join, channel_leave, channel_update).
--
-- go-redis resends a command whose reply was lost after the server ran it,
-- and a whole pipeline after a cut connection, so one request can run
-- twice. The caller draws a request ID (16 hex digits) before the first
-- send; the first run records its reply under it, and a second run of the
-- same request finds that reply and returns it without acting again.
--
-- A memo is a sorted set per entity (a user; a user in a channel; a user
-- in a conversation; an online-index shard's sweeps) scored by server time
-- (ms): two members per request with the time of its first run, the
-- request ID and "<request ID>=<field>,<field>,..." (its reply; fields are
-- status words and decimal integers). Each record drops the members older
-- than REPLAY_MS and keeps the memo for REPLAY_MS (REPLAY_MS: the
-- constants tracker.go puts first), so a resend is recognised for
-- REPLAY_MS after the first run however many other requests ran on the
-- entity meanwhile, and a memo holds the requests of the last REPLAY_MS.

-- REPLAY_CORRUPT is the reason given for a memo entry this package did
-- not write.
local REPLAY_CORRUPT = 'a request ID without its "<ID>=<fields>" reply'

-- replayed returns the reply recorded at key for request id: nil when
-- there is none (or id is ''), false when key holds the ID without a
-- reply this package wrote.
local function replayed(key, id)
  if id == '' then return nil end
  local at = redis.call('ZSCORE', key, id)
  if not at then return nil end
  local pre, body = id .. '=', nil
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', key, at, at)) do
    if string.sub(m, 1, #pre) == pre then
      body = string.sub(m, #pre + 1)
      break
    end
  end
  if not body or not string.match(body, '^[%w%-]+[%w,%-]*$') then return false end
  local rep = {}
  for f in string.gmatch(body, '[^,]+') do rep[#rep + 1] = f end
  return rep
end

-- remember records rep (a reply whose elements are words and integers) as
-- request id's at key, at now (server ms), drops the entries older than
-- REPLAY_MS and returns rep.
local function remember(key, id, rep, now)
  if id == '' then return rep end
  local parts = {}
  for i = 1, #rep do
    local x = rep[i]
    if type(x) == 'number' then x = int_str(x) end
    parts[i] = x
  end
  local t = int_str(now)
  redis.call('ZADD', key, t, id, t, id .. '=' .. table.concat(parts, ','))
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. int_str(now - REPLAY_MS))
  redis.call('PEXPIRE', key, REPLAY_MS)
  return rep
end
