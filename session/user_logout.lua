-- user_logout.lua: delete a user record unless it is blocked (uses
-- lib.lua's user_state).
--
-- KEYS[1] user record   user:{user_id}
--
-- Returns {'ok', 1} when deleted, {'ok', 0} when there was no record or it is
-- blocked (status blocked, or active 'false').
if user_state(KEYS[1]) == 'blocked' then return {'ok', 0} end
return {'ok', redis.call('DEL', KEYS[1])}
