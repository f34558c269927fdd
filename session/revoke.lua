-- revoke.lua: end one session at once (uses lib.lua).
--
-- KEYS[1] session hash   session:user:{user_id}:{session_id}
-- KEYS[2] user index     session:index:{user_id}
-- KEYS[3] request key    session:request:{user_id}:{request_id}
-- ARGV[1] session ID
-- ARGV[2] replay window, ms
-- KEYS[4] events stream   session:events:{slot}, with events only
-- KEYS[5] sweep schedule  session:due:{slot}, with events only
-- ARGV[#ARGV-2 .. #ARGV], with events only: user ID, events stream
--         length, index grace (ms) (lib.lua's events):
--         "revoked" is emitted for the session it ends
--
-- Returns {'ok', 1} when a live session was revoked, {'ok', 0} when there was none
-- (any leftovers are deleted either way). A revocation is recorded at
-- KEYS[3], so the same request sent again within the window reports {'ok', 1};
-- a run that found nothing records nothing, and runs again the same way. {'corrupt', i, why} when
-- KEYS[i] holds data this package did not write (nothing written).
local key, idx, sid = KEYS[1], KEYS[2], ARGV[1]
events(4)
local done = replayed(3, 1)
if done == false then return {'corrupt', 3, 'not a recorded outcome'} end
if done then return {'ok', done} end
local now = now_ms()
local abs, fail = live(key, idx, sid, now)
if fail then return fail end
if not abs then return {'ok', 0} end
emit('revoked', sid, int_str(now), 'revoke')
redis.call('DEL', key)
redis.call('ZREM', idx, sid)
index_ttl(idx, now)
remember(3, 1, ARGV[2])
return {'ok', 1}
