-- user_logout.lua: delete a user record unless it is blocked.
--
-- KEYS[1] user record   user:{user_id}
--
-- Returns 1 when deleted, 0 when there was no record or it is blocked.
if redis.call('HGET', KEYS[1], 'status') == 'blocked' then return 0 end
return redis.call('DEL', KEYS[1])
