-- remove_admin: requeue an admin's conversations, take them off the
-- roster and hand the backlog out to the others (after guard.lua,
-- stats.lua, lib.lua, route.lua).
-- ARGV[XA]   admin ID
-- Returns ok(the roster's admin IDs), conflict('roster', ids), or
-- corrupt(i, why).
return guarded(function()
  begin()
  local i = index[ARGV[XA]]
  if i then
    requeue(i, 'removed')
    redis.call('HDEL', KEYS[5], ARGV[XA])
    cap[i] = 0
  end
  close()
  return ok(redis.call('HKEYS', KEYS[5]))
end)
