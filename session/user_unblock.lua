-- user_unblock.lua: lift a block at once.
--
-- KEYS[1] user record   user:{user_id}
--
-- Restores status_before_block ('login' or 'anonymous'). A record that
-- Block created for a user without one is deleted. Returns 1 when a block
-- was lifted, 0 when the user was not blocked, nil when there is no record.
local key = KEYS[1]
local status = redis.call('HGET', key, 'status')
if not status then
  if redis.call('EXISTS', key) == 1 then return {'corrupt'} end
  return nil
end
if status ~= 'blocked' then return 0 end
local prev = redis.call('HGET', key, 'status_before_block')
if prev == 'login' or prev == 'anonymous' then
  redis.call('HSET', key, 'status', prev)
  redis.call('HDEL', key, 'status_before_block')
else
  redis.call('DEL', key)
end
return 1
