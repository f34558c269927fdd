-- add_admin: add an admin to the roster (or change their capacity) and
-- hand the backlog out (after guard.lua, stats.lua, lib.lua,
-- route.lua). ARGV's admins include the new one.
-- ARGV[XA]   admin ID
-- ARGV[XA+1] capacity
-- Returns ok(the roster's admin IDs), limit() when the roster already has
-- MAX_ADMINS others, conflict('roster', ids), or corrupt(i, why).
return guarded(function()
  local admin = ARGV[XA]
  typed(1, 2, 3, 4, 5, 6)
  if redis.call('HEXISTS', KEYS[5], admin) == 0 and redis.call('HLEN', KEYS[5]) >= MAX_ADMINS then
    return limit()
  end
  redis.call('HSET', KEYS[5], admin, ARGV[XA + 1])
  begin()
  close()
  return ok(redis.call('HKEYS', KEYS[5]))
end)
