-- delete_config.lua: DeleteConfig(id): delete the runtime config of one
-- API key and announce id on the events channel, so that every instance's
-- deny cache (WithDenyCache) drops the refusals it cached under the old
-- config. Deleting again is the same outcome.
--
-- KEYS[1]  config hash  ratelimit:config:{api_key_id}
-- ARGV[1]  channel      the events channel
-- ARGV[2]  payload      the API key ID (the limiter's identifier)
-- Returns {'ok', n}, n the number of keys deleted.

local n = redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return {'ok', n}
