-- authenticate.lua: Get and Users.Validate in one script, for the HTTP
-- middleware: the session is slid only when the user may proceed.
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- KEYS[3] user record    user:{user_id}
-- ARGV[1] session ID
-- ARGV[2] idle timeout, ms
-- ARGV[3] user record TTL, ms
--
-- Returns {now_ms, expiry_ms, {session field, value, ...}, {user field,
-- value, ...}}; nil when the session is not live; a status: 'corrupt'
-- (session), 'nouser', 'usercorrupt', or 'blocked' (the user record's TTL
-- and last_seen are refreshed as in Validate; the session is not slid).
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
local now = now_ms()
local abs = live(key, idx, sid, now)
if abs == false then return {'corrupt'} end
if not abs then return nil end
local u, st = user_touch(KEYS[3], ARGV[3])
if u == 'missing' then return {'nouser'} end
if u == 'corrupt' then return {'usercorrupt'} end
if st == 'blocked' then return {'blocked'} end
local exp = slide(key, idx, sid, now, tonumber(ARGV[2]), abs)
return {now, exp, redis.call('HGETALL', key), u}
