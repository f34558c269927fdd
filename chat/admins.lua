-- admins: the roster with each admin's capacity, availability and load,
-- read-only (after guard.lua, stats.lua, lib.lua, route.lua).
-- Returns ok(admin IDs, capacities, availabilities, loads), in ARGV's order,
-- conflict('roster', ids), or corrupt(i, why).
return guarded(function()
  typed(5)
  survey()
  local c, a, l = {}, {}, {}
  for i = 1, N do
    c[i], a[i], l[i] = cap[i], avail[i], load[i]
  end
  return ok(admins, c, a, l)
end)
