-- reset.lua: Reset(id): delete every key the limiter stores for id (the
-- state of every rule, any block, WithAutoBlock's refusal count; not the
-- runtime config) and announce id on the events channel, so that every
-- instance's deny cache (WithDenyCache) drops it at once. Deleting again
-- is the same outcome, so a resend after a lost reply is harmless.
--
-- KEYS     the keys to delete; all share the identifier's hash tag
-- ARGV[1]  channel  the events channel
-- ARGV[2]  payload  the identifier
-- Returns {'ok', n}, n the number of keys deleted.

local n = redis.call('DEL', unpack(KEYS))
redis.call('PUBLISH', ARGV[1], ARGV[2])
return {'ok', n}
