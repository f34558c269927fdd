-- user_logout.lua: delete a user record unless it is blocked.
--
-- KEYS[1] user record   user:{user_id}
--
-- Returns {'ok', 1} when deleted, {'ok', 0} when there was no record or it is
-- blocked.
if redis.call('HGET', KEYS[1], 'status') == 'blocked' then return {'ok', 0} end
return {'ok', redis.call('DEL', KEYS[1])}
