-- conversation: one conversation's state, activity and unread score,
-- read-only (after guard.lua).
-- KEYS[1] chat:{tag}:conversations:state   HASH
-- KEYS[2] chat:{tag}:conversations:active  ZSET
-- KEYS[3] chat:{tag}:conversations:unread  ZSET
-- ARGV[1] conversation ID
-- Returns ok(state or false, last activity or false, unread score or
-- false, server time ms), or corrupt(i, why) for a key of another type.
return guarded(function()
  local id = ARGV[1]
  return ok(rc(1, 'HGET', id) or false, rc(2, 'ZSCORE', id) or false, rc(3, 'ZSCORE', id) or false, now_ms())
end)
