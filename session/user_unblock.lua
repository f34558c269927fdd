-- user_unblock.lua: lift a block at once (uses lib.lua's replayed,
-- remember and user_state).
--
-- KEYS[1] user record   user:{user_id}
-- KEYS[2] request key   session:request:{user_id}:{request_id}
-- ARGV[1] replay window, ms
-- ARGV[2] '1' to write the active flag ('true') even where the record has
--         none (WithActiveField), '0'
--
-- Restores status_before_block ('login' or 'anonymous'), and sets an
-- active flag the record has (or any, with ARGV[2]) to 'true': a block by
-- either field is lifted. A record that Block created for a user without
-- one is deleted; one that another writer blocked (no status before the
-- block, other fields) comes back as login. Returns {'ok', 1} when a block was lifted (the same
-- request sent again within the window reports {'ok', 1} again and writes
-- nothing), {'ok', 0} when the user was not blocked, {'none'} when there
-- is no record, {'corrupt', i, why} when KEYS[i] holds data this package
-- does not read.
local key = KEYS[1]
local done = replayed(2, 1)
if done == false then return {'corrupt', 2, 'not a recorded outcome'} end
if done then return {'ok', done} end
local st, field, active = user_state(key)
if st == 'missing' then return {'none'} end
if st == false then return {'corrupt', 1, field} end
if st ~= 'blocked' then return {'ok', 0} end
if field == 'blocked' then
  local prev = redis.call('HGET', key, 'status_before_block')
  if prev == 'login' or prev == 'anonymous' then
    redis.call('HSET', key, 'status', prev)
    redis.call('HDEL', key, 'status_before_block')
  elseif prev and prev ~= 'none' then
    return {'corrupt', 1, 'status_before_block is not login, anonymous or none'}
  elseif not prev and redis.call('HEXISTS', key, 'login_time') == 1 then
    -- blocked by another writer (the backend's own code): a logged-in
    -- user's record (Block's own holds no login_time), which comes back
    -- as login, as Block reads one without a status
    redis.call('HSET', key, 'status', 'login')
  else
    -- the record Block created (no login_time: Login is refused while
    -- it lives), or one it overwrote (status_before_block 'none': not one this package reads)
    redis.call('DEL', key)
    remember(2, 1, ARGV[1])
    return {'ok', 1}
  end
end
if active or ARGV[2] == '1' then
  redis.call('HSET', key, 'active', 'true')
end
remember(2, 1, ARGV[1])
return {'ok', 1}
