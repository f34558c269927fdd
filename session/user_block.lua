-- user_block.lua: block a user at once.
--
-- KEYS[1] user record   user:{user_id}
-- ARGV[1] TTL, ms
--
-- Sets status to 'blocked' and the TTL to ARGV[1]. A previous status of
-- login or anonymous is kept in status_before_block for Unblock; any other
-- status (data this package did not write) is overwritten, so a block
-- always takes effect. A user without a record gets a record holding only
-- status = 'blocked', so a Login within the TTL is refused. Returns {'ok', 1}
-- when the status changed, {'ok', 0} when already blocked (the same request
-- sent twice reports that, which the caller does not see).
local key = KEYS[1]
local status = redis.call('HGET', key, 'status')
if status == 'blocked' then
  redis.call('PEXPIRE', key, ARGV[1])
  return {'ok', 0}
end
if status == 'login' or status == 'anonymous' then
  redis.call('HSET', key, 'status_before_block', status)
else
  redis.call('HDEL', key, 'status_before_block')
end
redis.call('HSET', key, 'status', 'blocked')
redis.call('PEXPIRE', key, ARGV[1])
return {'ok', 1}
