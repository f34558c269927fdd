-- resolve: close a conversation (its messages stay cached until their
-- TTL), count it in its admin's resolved_today, and hand the backlog out
-- (after guard.lua, stats.lua, lib.lua, route.lua).
-- KEYS[XK]   chat:{tag}:conversation:{id}:requests  (the request memo, lib.lua)
-- ARGV[XA]   conversation ID
-- Returns ok(admin it was assigned to, or ''), none() when the
-- conversation is not open, conflict('roster', ids), or corrupt(i, why).
return guarded(function()
  local conv = ARGV[XA]
  local out, st = enter(conv, begin, close)
  if out then return out end
  local prev = st.a
  local s = nil
  local pi = index[prev] -- nil for '', or for a foreign admin (dropped below)
  if pi then s = read_stats(kq(pi, 3), now) end
  drop(conv, st, 'resolved')
  if s then
    s.resolved = s.resolved + 1
    save_stats(s)
  end
  close()
  return ok(unpack(remember(XK, {prev})))
end)
