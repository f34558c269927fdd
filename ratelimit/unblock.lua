-- unblock.lua: Unblock(id): delete the identifier's block key, keeping the
-- rules' counters, and announce id on the events channel, so that every
-- instance's deny cache (WithDenyCache) drops the refusals it cached.
-- Deleting again is the same outcome, so a resend after a lost reply is
-- harmless.
--
-- KEYS[1]  block key  ratelimit:block:{id}
-- ARGV[1]  channel    the events channel
-- ARGV[2]  payload    the identifier
-- Returns {'ok', 1} when a block was lifted, {'ok', 0} when there was none.

local n = redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return {'ok', n}
