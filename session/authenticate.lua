-- authenticate.lua: get.lua and user_validate.lua in one script, for the
-- HTTP middleware: the session is slid only when the user may proceed
-- (uses lib.lua).
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- KEYS[3] user record    user:{user_id}
-- ARGV[1] session ID
-- ARGV[2] idle timeout, ms
-- ARGV[3] user record TTL, ms
-- ARGV[4] user ID (the session's user_id must be it)
-- KEYS[4] events stream   session:events:{slot}, with events only
-- KEYS[5] sweep schedule  session:due:{slot}, with events only
-- ARGV[#ARGV-2 .. #ARGV], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events)
--
-- Returns {'ok', now_ms, expiry_ms, {session field, value, ...}, {user field,
-- value, ...}}; {'none', 'session'} when the session is not live;
-- {'none', 'user'} when there is no user record; {'conflict'} when the user is
-- blocked (the record's TTL and last_seen are refreshed as in Validate;
-- the session is not slid); {'corrupt', i, why}. Every key is read and
-- checked before the first write (live's check): a session hash the Go
-- side would refuse (session_bad), a user record that is not one this
-- package writes, or a missing one, fails the call with nothing written.
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
events(4)
local now = now_ms()
local st
local abs, fail = live(key, idx, sid, now, function(n, v)
  local why = session_bad(ARGV[4], n, v[2], v[3], v[4])
  if why then return {'corrupt', 1, why} end
  st, why = user_touch(KEYS[3], nil, now)
  if st == 'missing' then return {'none', 'user'} end
  if st == false then return {'corrupt', 3, why} end
end)
if fail then return fail end
if not abs then return {'none', 'session'} end
local u = user_touch(KEYS[3], ARGV[3], now, st)
if st == 'blocked' then return {'conflict'} end
local exp = slide(key, idx, sid, now, tonumber(ARGV[2]), abs)
return {'ok', now, exp, redis.call('HGETALL', key), u}
