-- unassign: give a conversation back to the backlog, at its arrival's
-- place, and hand the backlog out; the conversation does not go back to
-- the same admin in this run (after guard.lua, stats.lua, lib.lua,
-- route.lua).
-- KEYS[XK]   chat:{tag}:conversation:{id}:requests  (the request memo, lib.lua)
-- ARGV[XA]   conversation ID
-- Returns ok(admin now or '', previous admin or ''), none() when the
-- conversation is not open, conflict('roster', ids), or corrupt(i, why).
return guarded(function()
  local conv = ARGV[XA]
  local out, st = enter(conv, begin, close)
  if out then return out end
  local prev = st.a
  if prev == '' then
    close()
    return ok(unpack(remember(XK, {'', ''})))
  end
  local pi = index[prev]
  release(conv, st)
  enqueue(conv, st, prev, 'unassigned')
  close(conv, pi)
  return ok(unpack(remember(XK, {get_state(conv).a, prev})))
end)
