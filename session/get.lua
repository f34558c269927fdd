-- get.lua: read a live session and slide its idle deadline.
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
-- ARGV[2] idle timeout, ms
--
-- Returns {now_ms, expiry_ms, {field, value, ...}} for a live session; nil
-- when the session is missing, expired, evicted or revoked (its leftovers
-- are deleted); the status 'corrupt' when absolute_expiry is unreadable.
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
local now = now_ms()
local abs = live(key, idx, sid, now)
if abs == false then return {'corrupt'} end
if not abs then return nil end
local exp = slide(key, idx, sid, now, tonumber(ARGV[2]), abs)
return {now, exp, redis.call('HGETALL', key)}
