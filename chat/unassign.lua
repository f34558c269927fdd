-- unassign: give a conversation back to the backlog, at its arrival's
-- place, and hand the backlog out; the conversation does not go back to
-- the same admin in this run.
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
-- Returns {'ok', admin now or '', previous admin or ''}, {'none'} when the
-- conversation is not open, {'conflict', 'roster', ids}, or {'corrupt', i, why}.
setup()
return guarded(function()
  local conv = ARGV[XA]
  local out, st = enter(conv, begin, close)
  if out then return out end
  local prev = st.a
  if prev == '' then
    close()
    return {'ok', unpack(remember(XK, {'', ''}))}
  end
  local pi = index[prev]
  release(conv, st)
  enqueue(conv, st, prev, 'unassigned')
  close(conv, pi)
  return {'ok', unpack(remember(XK, {get_state(conv).a, prev}))}
end)
