-- reconcile: drop expired conversations, requeue those of offline or
-- expired admins, and hand the backlog out (after guard.lua, stats.lua,
-- lib.lua, route.lua; no keys or arguments of its own).
-- Returns ok(expired, requeued, assigned), conflict('roster', ids), or
-- corrupt(i, why).
return guarded(function()
  begin()
  close()
  return ok(expired_n, requeued_n, assigned_n)
end)
