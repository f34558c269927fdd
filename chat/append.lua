-- append: cache a message and update the conversation's activity and
-- unread state. Its common case runs append_fast.lua first (call.Head),
-- which falls through to this.
-- KEYS and ARGV begin with lib.lua's layout (its header has the types):
--   KEYS[1..6]  chat:{tag}:conversations:state, :active, :unread and
--               :backlog, chat:{tag}:admins (the roster), chat:{tag}:cursor
--   KEYS[7..6+4N] four per roster admin: availability, assignments,
--               stats, dashboard
--   ARGV[1..16] N, conversation TTL, strategy, the message, assigned,
--               resolved and read channels, request ID, MAX_ADMINS,
--               MAX_CAPACITY, AVAIL_MS, REPLAY_MS, PRUNE, DRAIN, SKEW,
--               STATS_MS
--   ARGV[17..16+N] the roster's admin IDs, sorted
-- then its own (XK = 7 + 4N, XA = 17 + N):
-- KEYS[XK]   chat:{tag}:conversation:{id}:requests  (the request memo, lib.lua)
-- KEYS[XK+1] chat:{tag}:conversation:{id}:messages
-- ARGV[XA]   conversation ID
-- ARGV[XA+1] sender role: 'user', 'admin' or 'system'
-- ARGV[XA+2] content (UTF-8)
-- ARGV[XA+3] sender ID, or ''
-- ARGV[XA+4] messages kept
-- The message is {"id","content","sender_role","sender_id"?,"timestamp"}
-- with id one more than the newest cached one's (1 for an empty cache)
-- and timestamp the server time as JavaScript's toISOString writes it.
-- A user message puts the conversation in the unread queue (if it is not
-- there) and starts its wait for a reply; an admin message takes it out
-- (a "read" event) and, if a user was waiting, records the response time
-- for the assigned admin; a system message changes neither. Every
-- message is activity: the conversation's score in the active set.
-- Returns {'ok', message ID, server time ms}, {'none'} when the conversation is
-- not open, {'conflict', 'roster', ids}, or {'corrupt', i, why}.
setup()
return guarded(function()
  local conv, role, content, sender, keep = ARGV[XA], ARGV[XA + 1], ARGV[XA + 2], ARGV[XA + 3], ARGV[XA + 4]
  local out, st = enter(conv, function() typed(1, 2, 3, 6) end, finish)
  if out then return out end
  local i = nil
  if st.a ~= '' then i = need(st.a) end
  local id = 1
  local head = rc(XK + 1, 'LINDEX', 0)
  if head then
    local h = to_int(string.match(head, '^{"id":(%d+),'), 1)
    if not h then bad(XK + 1, 'the newest entry is not a message this package wrote') end
    id = h + 1
  end
  local s = nil
  if role == 'admin' and st.w > 0 and i then s = read_stats(kq(i, 3), now) end
  -- A user message entering the unread queue takes its order stamp now,
  -- before the first write: a cursor whose stamp does not parse ends the
  -- script with nothing written (next_stamp's own HSET is its first).
  local stamp = nil
  if role == 'user' and not rc(3, 'ZSCORE', conv) then stamp = next_stamp() end

  local ts = string.sub(rfc3339(now), 1, -2) .. string.format('.%03dZ', now % 1000)
  local msg = '{"id":' .. int_str(id) .. ',"content":' .. json_str(content) ..
    ',"sender_role":"' .. role .. '"'
  if sender ~= '' then msg = msg .. ',"sender_id":' .. json_str(sender) end
  msg = msg .. ',"timestamp":"' .. ts .. '"}'
  rc(XK + 1, 'LPUSH', msg)
  rc(XK + 1, 'LTRIM', 0, keep - 1)
  redis.call('PEXPIRE', KEYS[XK + 1], TTL)
  rc(2, 'ZADD', int_str(now), conv)
  if role == 'user' then
    if stamp then
      rc(3, 'ZADD', score(st.b, stamp), conv)
      if i then dirty[i] = true end
    end
    if st.w == 0 then
      st.w = now
      put_state(conv, st)
    end
  elseif role == 'admin' then
    if rc(3, 'ZREM', conv) == 1 then
      event(CH_READ, 'read', conv, st.a, '', 'reply')
      if i then dirty[i] = true end
    end
    if st.w > 0 then
      if s then
        s.rt_sum = s.rt_sum + (now - st.w)
        s.rt_n = s.rt_n + 1
        save_stats(s)
        dirty[i] = true
      end
      st.w = 0
      put_state(conv, st)
    end
  end
  if i then redis.call('PEXPIRE', KEYS[kq(i, 2)], TTL) end
  event(CH_MESSAGE, 'message', conv, st.a, '', role, ',"message":' .. msg)
  finish()
  return {'ok', unpack(remember(XK, {id, now}))}
end)
