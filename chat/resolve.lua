-- resolve: close a conversation (its messages stay cached until their
-- TTL), count it in its admin's resolved_today, and hand the backlog out.
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
-- Returns {'ok', admin it was assigned to, or ''}, {'none'} when the
-- conversation is not open, {'conflict', 'roster', ids}, or {'corrupt', i, why}.
setup()
return guarded(function()
  local conv = ARGV[XA]
  -- The admin's stats are read and checked before tidy's first write.
  local s = nil
  local out, st = enter(conv, begin, close, function(st)
    local pi = index[st.a] -- nil for '', or for a foreign admin (dropped below)
    if pi then s = read_stats(kq(pi, 3), now) end
  end)
  if out then return out end
  local prev = st.a
  if prev == '' then s = nil end -- requeued by tidy: no admin counts it
  drop(conv, st, 'resolved')
  if s then
    s.resolved = s.resolved + 1
    save_stats(s)
  end
  close()
  return {'ok', unpack(remember(XK, {prev}))}
end)
