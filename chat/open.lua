-- open: open a conversation in the backlog and hand the backlog out
-- (after guard.lua, stats.lua, lib.lua, route.lua; KEYS and ARGV as
-- lib.lua says).
-- KEYS[XK]   chat:{tag}:conversation:{id}:replay
-- ARGV[XA]   conversation ID
-- ARGV[XA+1] priority band, 0 (low) to 3 (urgent)
-- Returns ok(admin or '', 1 when this request opened it, 0 when it was
-- open already), conflict('roster', ids), or corrupt(i, why).
return guarded(function()
  local conv, band = ARGV[XA], tonumber(ARGV[XA + 1])
  local rep, old = replayed(XK)
  if rep then return ok(unpack(rep)) end
  begin()
  local created = 0
  if not live(conv) then
    rc(2, 'ZADD', int_str(now), conv)
    enqueue(conv, {b = band, s = next_stamp(), w = 0, a = ''}, '', 'opened')
    all_dirty = true
    created = 1
  end
  close()
  return ok(unpack(remember(XK, {get_state(conv).a, created}, old)))
end)
