-- sem_acquire: take one of limit permits, each a lease of its own.
-- KEYS[1] semaphore         lock:sem:{resource_type}:{resource_id} (zset owner ID -> expiry ms)
-- ARGV[1] owner ID, new for each Acquire or TryAcquire call
-- ARGV[2] lease, ms
-- ARGV[3] limit (>= 1)
-- ARGV[4] the client's max lease, ms
-- ARGV[5] weight n (optional, default 1): the permits this holder takes,
--         members {owner}, {owner}:2, ..., {owner}:n with one expiry
-- Returns {'ok'} when the permits were taken, {'conflict', ms until the first
-- permit expires} when fewer than n are free.
-- A permit expires at the first whole ms at or after now + lease, never
-- earlier than the holder's local deadline; it is live while its expiry is
-- above now (ms, rounded down). A member whose expiry lies beyond now +
-- max lease was not written by this package (a foreign or hand-made
-- member that would never expire): it is dropped, not counted. A replay
-- of a call that already took a permit finds it and reports ok.
local nowus = now_us()
local nowms = math.floor(nowus / 1000)
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
if mine and tonumber(mine) > nowms then
  return 'ok'
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowms)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. int_str(math.ceil(nowus / 1000) + tonumber(ARGV[4])), '+inf')
local n = tonumber(ARGV[5] or '1')
if redis.call('ZCARD', KEYS[1]) + n > tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[1], '0', '0', 'WITHSCORES')
  return {'conflict', tonumber(first[2]) - nowms}
end
local at = int_str(math.ceil(nowus / 1000) + tonumber(ARGV[2]))
local add = {at, ARGV[1]}
for k = 2, n do
  add[#add + 1] = at
  add[#add + 1] = ARGV[1] .. ':' .. k
end
batched('ZADD', KEYS[1], add)
local last = redis.call('ZRANGE', KEYS[1], '-1', '-1', 'WITHSCORES')
expire_at(KEYS[1], tonumber(last[2]), nowms)
return 'ok'
