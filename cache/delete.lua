-- delete: remove an entry (value and metadata, hence any lease) and tell
-- local tiers.
-- KEYS[1] value key   (STRING)
-- KEYS[2] meta key    (HASH)
-- ARGV[1] events channel
-- ARGV[2] origin
-- Returns {'ok', n}: the keys removed. A load in flight loses its lease, so
-- it cannot put back what was there before. Idempotent.
local n = redis.call('UNLINK', KEYS[1], KEYS[2])
redis.call('PUBLISH', ARGV[1], 'k ' .. ARGV[2] .. ' ' .. KEYS[1])
return {'ok', n}
