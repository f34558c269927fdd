-- refresh_hash.lua: the stored refresh-token hash of a live session
-- (uses lib.lua).
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- ARGV[1] session ID
-- KEYS[3] events stream   session:events:{slot}, with events only
-- KEYS[4] sweep schedule  session:due:{slot}, with events only
-- ARGV[#ARGV-2 .. #ARGV], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events)
--
-- Returns {'ok', hex SHA-256 stored in refresh_token_hash, '' when none};
-- {'none'} when the session is not live; {'corrupt', i, why} (nothing
-- written: the hash is read and checked in live's check, before its
-- prune).
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
events(3)
local now = now_ms()
local cur
local abs, fail = live(key, idx, sid, now, function()
  cur = redis.call('HGET', key, 'refresh_token_hash') or ''
  if cur ~= '' and (#cur ~= 64 or string.find(cur, '[^0-9a-f]')) then
    return {'corrupt', 1, 'refresh_token_hash is not a hex SHA-256'}
  end
end)
if fail then return fail end
if not abs then return {'none'} end
return {'ok', cur}
