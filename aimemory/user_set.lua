-- user_set: set one field of a user's context.
-- KEYS[1] user context   ai:memory:user:{user_id}
-- ARGV[1] field
-- ARGV[2] value
-- ARGV[3] user context TTL, ms (a longer TTL left is kept)
-- Returns {'ok'}. Idempotent.
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 'ok'
