-- move: assign a conversation to a named admin, from the backlog or from
-- another admin.
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
-- then its own (XK = 7 + 4N, XA = 17 + N):
-- KEYS[XK]   chat:{tag}:conversation:{id}:requests  (the request memo, lib.lua)
-- ARGV[XA]   conversation ID
-- ARGV[XA+1] the admin to assign it to
-- ARGV[XA+2] '1' when the conversation must be assigned to ARGV[XA+3] now
--            (Transfer), '0' for any (Assign)
-- ARGV[XA+3] that admin
-- ARGV[XA+4] the event's reason: 'explicit' or 'transfer'
-- Returns {'ok', admin, previous admin or ''}, {'none'} when the conversation
-- is not open, {'conflict', 'unknown'} when the admin is not in the roster,
-- {'conflict', 'assigned', current admin} when the Transfer's admin does not
-- hold it, {'conflict', 'unavailable', availability} when the admin is not
-- online, {'limit'} when the admin is at capacity, {'conflict', 'roster', ids},
-- or {'corrupt', i, why}.
setup()
return guarded(function()
  local conv, target, check, from = ARGV[XA], ARGV[XA + 1], ARGV[XA + 2] == '1', ARGV[XA + 3]
  local out, st = enter(conv, begin, close)
  if out then return out end
  local t = index[target]
  if not t then
    out = {'conflict', 'unknown'}
  elseif check and st.a ~= from then
    out = {'conflict', 'assigned', st.a}
  elseif st.a == target then
    out = {'ok', unpack(remember(XK, {target, target}))}
  elseif avail[t] ~= 'online' then
    out = {'conflict', 'unavailable', avail[t]}
  elseif load[t] >= cap[t] then
    out = {'limit'}
  else
    local prev = st.a
    release(conv, st)
    give(conv, st, t, ARGV[XA + 4], prev)
    out = {'ok', unpack(remember(XK, {target, prev}))}
  end
  close()
  return out
end)
