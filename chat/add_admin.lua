-- add_admin: add an admin to the roster (or change their capacity) and
-- hand the backlog out.
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
-- (ARGV's admins include the new one), then its own (XA = 17 + N):
-- ARGV[XA]   admin ID
-- ARGV[XA+1] capacity
-- Returns {'ok', the roster's admin IDs}, {'limit'} when the roster already has
-- MAX_ADMINS others, {'conflict', 'roster', ids}, or {'corrupt', i, why}.
setup()
return guarded(function()
  local admin = ARGV[XA]
  typed(1, 2, 3, 4, 5, 6)
  if redis.call('HEXISTS', KEYS[5], admin) == 0 and redis.call('HLEN', KEYS[5]) >= MAX_ADMINS then
    return {'limit'}
  end
  -- The roster is checked as it will be (with admin at their new
  -- capacity) before the admin is written: a stale roster or a corrupt
  -- capacity, availability or assignments set ends the script without
  -- the write, so a call that gives up (errRosterChurn) added no one.
  begin(index[admin], ARGV[XA + 1])
  tidy()
  redis.call('HSET', KEYS[5], admin, ARGV[XA + 1])
  close()
  return {'ok', redis.call('HKEYS', KEYS[5])}
end)
