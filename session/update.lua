-- update.lua: change fields of a live session and slide its idle deadline.
-- A missing, expired or revoked session is never written (no HSET brings
-- a deleted hash back).
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
-- ARGV[2] idle timeout, ms
-- ARGV[3] number of fields to delete, n
-- ARGV[4 .. 3+n] fields to delete
-- ARGV[4+n ..] field, value pairs to set
--
-- Returns the new expiry in ms; nil when the session is not live; the
-- status 'corrupt' when absolute_expiry is unreadable.
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
local now = now_ms()
local abs = live(key, idx, sid, now)
if abs == false then return {'corrupt'} end
if not abs then return nil end
local ndel = tonumber(ARGV[3])
if ndel > 0 then
  redis.call('HDEL', key, unpack(ARGV, 4, 3 + ndel))
end
if #ARGV >= 4 + ndel then
  redis.call('HSET', key, unpack(ARGV, 4 + ndel, #ARGV))
end
return slide(key, idx, sid, now, tonumber(ARGV[2]), abs)
