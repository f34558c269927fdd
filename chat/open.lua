-- open: open a conversation in the backlog and hand the backlog out.
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
-- ARGV[XA+1] priority band, 0 (low) to 3 (urgent)
-- Returns {'ok', admin or '', 1 when this request opened it, 0 when it was
-- open already}, {'conflict', 'roster', ids}, or {'corrupt', i, why}.
setup()
return guarded(function()
  local conv, band = ARGV[XA], tonumber(ARGV[XA + 1])
  local rep = replayed(XK)
  if rep then return {'ok', unpack(rep)} end
  begin()
  -- The stamp and this conversation before any write: a cursor whose
  -- stamp does not parse, or a state or activity of conv that does not,
  -- ends the script before tidy drops or requeues anything (an Open of
  -- an open conversation checks the stamp too).
  read_stamp()
  local open = live(conv)
  tidy()
  if not open then
    local st = {b = band, s = next_stamp(), w = 0, a = ''}
    rc(2, 'ZADD', int_str(now), conv)
    all_dirty = true
    -- With nothing else in the backlog (none at the start, none
    -- requeued), drain would take this conversation first: hand it out
    -- without queueing and reading it back, and there is nothing left to
    -- drain. The events are enqueue's and give's.
    local i = card[4] == 0 and requeued_n == 0 and pick(nil)
    if not i then
      enqueue(conv, st, '', 'opened')
      close()
      return {'ok', unpack(remember(XK, {get_state(conv).a, 1}))}
    end
    event(CH_ASSIGNED, 'assigned', conv, '', '', 'opened')
    give(conv, st, i, 'backlog', '', true)
    assigned_n = assigned_n + 1
    finish()
    return {'ok', unpack(remember(XK, {st.a, 1}))}
  end
  close()
  return {'ok', unpack(remember(XK, {get_state(conv).a, 0}))}
end)
