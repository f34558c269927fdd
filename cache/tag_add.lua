-- tag_add: record an entry under a tag, in the write-back's pipeline.
-- KEYS[1] tag key         (ZSET: entry key -> expiry, Unix ms)
-- KEYS[2] tag generation  (STRING)
-- ARGV[1] entry key
-- ARGV[2] the generation the load saw when it started ('' for none), or
--         '*' to skip the check (a Set)
-- ARGV[3] the entry's life (freshness + grace), ms
-- ARGV[4] the longest life of any entry, ms (a member scored beyond it
--         was not written by this package and does not extend the tag)
-- Returns {'ok'} when recorded, {'conflict', 'invalidated'} when the tag was
-- invalidated since the load started (the caller takes its write back).
-- Expired members are pruned here, at most 64 per call, and the tag
-- expires with its longest-lived member. Idempotent.
if ARGV[2] ~= '*' then
  local g = redis.call('GET', KEYS[2]) or ''
  if g ~= ARGV[2] then
    return {'conflict', 'invalidated'}
  end
end
local now = now_ms()
local exp = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], 'GT', int_str(exp), ARGV[1])
local dead = redis.call('ZRANGE', KEYS[1], '-inf', int_str(now), 'BYSCORE', 'LIMIT', '0', '64')
if #dead > 0 then
  redis.call('ZREM', KEYS[1], unpack(dead))
end
local top = redis.call('ZRANGE', KEYS[1], '-1', '-1', 'WITHSCORES')
local last = to_num(top[2]) or exp
expire_at(KEYS[1], math.min(math.max(last, exp), now + tonumber(ARGV[4])), now)
return 'ok'
