-- conversation: one conversation's state, activity and unread score,
-- read-only (lib.lua's guard).
-- KEYS[1] chat:{tag}:conversations:state   HASH
-- KEYS[2] chat:{tag}:conversations:active  ZSET
-- KEYS[3] chat:{tag}:conversations:unread  ZSET
-- ARGV[1] conversation ID
-- Returns {'ok', state or false, last activity or false, unread score or
-- false, server time ms}, or {'corrupt', i, why} for a key of another type.
-- The last activity is in decimal digits when it is a time (miniredis
-- prints a round score in exponent form), else as the server printed it.
return guarded(function()
  local id = ARGV[1]
  local st, act, unread = rc(1, 'HGET', id), rc(2, 'ZSCORE', id), rc(3, 'ZSCORE', id)
  return {'ok', st or false, act and score_digits(act) or false, unread or false, now_ms()}
end)
