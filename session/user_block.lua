-- user_block.lua: block a user at once.
--
-- KEYS[1] user record   user:{user_id}
-- ARGV[1] TTL, ms
--
-- Sets status to 'blocked' and the TTL to ARGV[1]. The previous status is
-- kept in status_before_block for Unblock. A user without a record gets a
-- record holding only status = 'blocked', so a Login within the TTL is
-- refused. Returns 1 when the status changed, 0 when already blocked.
local key = KEYS[1]
local status = redis.call('HGET', key, 'status')
redis.call('PEXPIRE', key, ARGV[1])
if status == 'blocked' then return 0 end
if status then
  redis.call('HSET', key, 'status_before_block', status)
end
redis.call('HSET', key, 'status', 'blocked')
redis.call('PEXPIRE', key, ARGV[1])
return 1
