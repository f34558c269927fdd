-- reconcile: drop expired conversations, requeue those of offline or
-- expired admins, and hand the backlog out.
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
-- It has no keys or arguments of its own.
-- Returns {'ok', expired, requeued, assigned}, {'conflict', 'roster', ids}, or
-- {'corrupt', i, why}.
setup()
return guarded(function()
  begin()
  tidy()
  close()
  return {'ok', expired_n, requeued_n, assigned_n}
end)
