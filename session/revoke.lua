-- revoke.lua: end one session at once.
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
--
-- Returns 1 when a live session was revoked, 0 when there was none (any
-- leftovers are deleted either way).
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
local now = now_ms()
local abs = live(key, idx, sid, now)
redis.call('DEL', key)
redis.call('ZREM', idx, sid)
fix_index(idx, now)
if abs then return 1 end
return 0
