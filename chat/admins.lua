-- admins: the roster with each admin's capacity, availability and load,
-- read-only.
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
-- Returns {'ok', admin IDs, capacities, availabilities, loads}, in ARGV's order,
-- {'conflict', 'roster', ids}, or {'corrupt', i, why}.
setup()
return guarded(function()
  typed(5)
  survey()
  local c, a, l = {}, {}, {}
  for i = 1, N do
    c[i], a[i], l[i] = cap[i], avail[i], load[i]
  end
  return {'ok', admins, c, a, l}
end)
