-- priority: change a conversation's priority; its places in the backlog
-- and the unread queue keep their age (after guard.lua, stats.lua,
-- lib.lua).
-- KEYS[XK]   chat:{tag}:conversation:{id}:requests  (the request memo, lib.lua)
-- ARGV[XA]   conversation ID
-- ARGV[XA+1] priority band, 0 (low) to 3 (urgent)
-- Returns ok(previous band), none() when the conversation is not open,
-- or corrupt(i, why).
return guarded(function()
  local conv, band = ARGV[XA], tonumber(ARGV[XA + 1])
  local out, st = enter(conv, function() typed(1, 2, 3, 4, 6) end, finish)
  if out then return out end
  local prev = st.b
  if prev ~= band then
    local u = rc(3, 'ZSCORE', conv)
    if u then
      local _, stamp = unscore(3, u)
      rc(3, 'ZADD', score(band, stamp), conv)
    end
    st.b = band
    put_state(conv, st)
    if st.a == '' then rc(4, 'ZADD', score(band, st.s), conv) end
  end
  finish()
  return ok(unpack(remember(XK, {prev})))
end)
