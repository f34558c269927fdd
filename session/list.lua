-- list.lua: the live sessions of a user, pruning dead index entries.
--
-- KEYS[1] user index     session:index:{user_id}
--
-- Returns {session_id, expiry_ms, ...} ordered by expiry, soonest first.
local idx = KEYS[1]
fix_index(idx, now_ms())
return redis.call('ZRANGE', idx, 0, -1, 'WITHSCORES')
