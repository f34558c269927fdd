-- priority: change a conversation's priority; its places in the backlog
-- and the unread queue keep their age.
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
-- Returns {'ok', previous band}, {'none'} when the conversation is not open,
-- or {'corrupt', i, why}.

-- unscore returns the band and stamp of a score read from KEYS[i].
local function unscore(i, v)
  local n = tonumber(v)
  if not n or n < 0 or n >= 4 * BAND or n ~= math.floor(n) then
    bad(i, 'a score is not band x 2^51 + (2^51 - 1 - stamp)')
  end
  local b = math.floor(n / BAND)
  return b, BAND - 1 - (n - b * BAND)
end

setup()
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
  return {'ok', unpack(remember(XK, {prev}))}
end)
