-- refresh_hash.lua: the stored refresh-token hash of a live session.
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
--
-- Returns the hex SHA-256 stored in refresh_token_hash ('' when none); nil
-- when the session is not live; the status 'corrupt' when
-- absolute_expiry is unreadable.
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
local abs = live(key, idx, sid, now_ms())
if abs == false then return {'corrupt'} end
if not abs then return nil end
return redis.call('HGET', key, 'refresh_token_hash') or ''
