-- user_block.lua: block a user at once (uses lib.lua's user_state).
--
-- KEYS[1] user record   user:{user_id}
-- ARGV[1] TTL, ms
-- ARGV[2] '1' to write the active flag ('false') even where the record has
--         none (WithActiveField), '0'
--
-- Sets status to 'blocked' and the TTL to ARGV[1]; an active flag the
-- record has (or any, with ARGV[2]) becomes 'false', so that the
-- home-automation backend's own validator refuses the user too. The state
-- before (user_state: login or anonymous, an active 'true' alone being
-- login) is kept in status_before_block for Unblock; a status this
-- package does not read is overwritten, so a block always takes effect.
-- A user without a record gets a record holding only status = 'blocked'
-- (and active 'false' with ARGV[2]), so a Login within the TTL is refused.
-- Returns {'ok', 1} when the state changed, {'ok', 0} when already blocked
-- (the same request sent twice reports that, which the caller does not
-- see).
local key = KEYS[1]
local st, field, active = user_state(key)
local flag = ARGV[2] == '1' or redis.call('HEXISTS', key, 'active') == 1
if st == 'blocked' and field == 'blocked' and (not flag or active == 'false') then
  redis.call('PEXPIRE', key, ARGV[1])
  return {'ok', 0}
end
local before
if field == 'login' or field == 'anonymous' then
  before = field
elseif st and st ~= 'missing' and not field then
  before = 'login'
end
if before then
  redis.call('HSET', key, 'status_before_block', before)
elseif st == false then
  -- a record this package does not read: Unblock deletes it
  redis.call('HSET', key, 'status_before_block', 'none')
elseif field ~= 'blocked' then
  redis.call('HDEL', key, 'status_before_block')
end
redis.call('HSET', key, 'status', 'blocked')
if flag then
  redis.call('HSET', key, 'active', 'false')
end
redis.call('PEXPIRE', key, ARGV[1])
if st == 'blocked' then return {'ok', 0} end
return {'ok', 1}
