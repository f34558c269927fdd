-- read: take a conversation out of the unread queue (after guard.lua,
-- stats.lua, lib.lua). Its wait for a reply goes on until an admin
-- message.
-- KEYS[XK]   chat:{tag}:conversation:{id}:requests  (the request memo, lib.lua)
-- ARGV[XA]   conversation ID
-- Returns ok(1 when it was unread, else 0), none() when the conversation
-- is not open, conflict('roster', ids), or corrupt(i, why).
return guarded(function()
  local conv = ARGV[XA]
  local out, st = enter(conv, function() typed(1, 2, 3) end, finish)
  if out then return out end
  local i = nil
  if st.a ~= '' then i = need(st.a) end
  local was = rc(3, 'ZREM', conv)
  if was == 1 then
    event(CH_READ, 'read', conv, st.a, '', 'read')
    if i then dirty[i] = true end
  end
  finish()
  return ok(unpack(remember(XK, {was})))
end)
