-- read: an entry and its metadata in one atomic step, for a fetch whose
-- plain reads (see read.go) failed or met metadata without a hint (an
-- older version's, with fresh_until_ms in server time). Read-only; the
-- caller decides, as it does with the plain reads' replies.
-- KEYS[1] value key   (STRING)
-- KEYS[2] meta key    (HASH)
-- ARGV: none
-- Returns {'ok', value, value_pttl, hint, meta_pttl, fresh_until_ms,
-- delta_ms, state, now_ms}: value and the meta fields false when absent.
-- A key of another type fails with WRONGTYPE (the caller reports it and
-- reloads, which overwrites it).
local v = redis.call('GET', KEYS[1])
local m = redis.call('HMGET', KEYS[2], 'hint', 'fresh_until_ms', 'delta_ms', 'state')
return {'ok', v, redis.call('PTTL', KEYS[1]), m[1], redis.call('PTTL', KEYS[2]), m[2], m[3], m[4], now_ms()}
