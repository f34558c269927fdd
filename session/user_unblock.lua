-- user_unblock.lua: lift a block at once (uses lib.lua's replayed and
-- remember).
--
-- KEYS[1] user record   user:{user_id}
-- KEYS[2] request key   session:request:{user_id}:{request_id}
-- ARGV[1] replay window, ms
--
-- Restores status_before_block ('login' or 'anonymous'). A record that
-- Block created for a user without one is deleted. Returns {'ok', 1} when a
-- block was lifted (the same request sent again within the window reports
-- {'ok', 1} again and writes nothing), {'ok', 0} when the user was not blocked,
-- {'none'} when there is no record, {'corrupt', i, why} when KEYS[i] holds data
-- this package did not write.
local key = KEYS[1]
local done = replayed(2, 1)
if done == false then return {'corrupt', 2, 'not a recorded outcome'} end
if done then return {'ok', done} end
local r = redis.call('HMGET', key, 'status', 'status_before_block')
local status, prev = r[1], r[2]
if not status then
  if redis.call('EXISTS', key) == 1 then return {'corrupt', 1, 'no status field'} end
  return {'none'}
end
if status == 'login' or status == 'anonymous' then return {'ok', 0} end
if status ~= 'blocked' then
  return {'corrupt', 1, 'status is not login, anonymous or blocked'}
end
if prev == 'login' or prev == 'anonymous' then
  redis.call('HSET', key, 'status', prev)
  redis.call('HDEL', key, 'status_before_block')
elseif prev then
  return {'corrupt', 1, 'status_before_block is not login or anonymous'}
else
  redis.call('DEL', key)
end
remember(2, 1, ARGV[1])
return {'ok', 1}
