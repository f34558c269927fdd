-- remove_admin: requeue an admin's conversations, take them off the
-- roster and hand the backlog out to the others.
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
-- then its own (XA = 17 + N):
-- ARGV[XA]   admin ID
-- Returns {'ok', the roster's admin IDs}, {'conflict', 'roster', ids}, or
-- {'corrupt', i, why}.
setup()
return guarded(function()
  begin()
  tidy()
  local i = index[ARGV[XA]]
  if i then
    requeue(i, 'removed')
    redis.call('HDEL', KEYS[5], ARGV[XA])
    cap[i] = 0
  end
  close()
  return {'ok', redis.call('HKEYS', KEYS[5])}
end)
