-- read: take a conversation out of the unread queue. Its wait for a
-- reply goes on until an admin message.
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
-- ARGV[XA]   conversation ID
-- Returns {'ok', 1 when it was unread, else 0}, {'none'} when the conversation
-- is not open, {'conflict', 'roster', ids}, or {'corrupt', i, why}.
setup()
return guarded(function()
  local conv = ARGV[XA]
  local out, st = enter(conv, function() typed(1, 2, 3) end, finish)
  if out then return out end
  local i = nil
  if st.a ~= '' then i = need(st.a) end
  local was = rc(3, 'ZREM', conv)
  if was == 1 then
    event(CH_READ, 'read', conv, st.a, '', 'read')
    if i then dirty[i] = true end
  end
  finish()
  return {'ok', unpack(remember(XK, {was}))}
end)
