-- sweep.lua: announce the silent expiries of one online-index shard: users
-- whose presence expired without a Disconnect (or any later operation on
-- them) and who have not been announced yet.
-- Prepended with index.lua; ARGV[1..8] as lib.lua describes them (ARGV[1],
-- ARGV[2], ARGV[3] and ARGV[8] unused; ARGV[7] is "1").
-- KEYS[1] presence:online:{slot}    the shard (zset)
-- ARGV[9] most members to announce in this call
-- Each pending member (score positive and below now: the presence key has
-- expired, by the same server clock that wrote the score) is announced with
-- the offline event Disconnect publishes ("previous" from the score's
-- status fraction, "at" the expiry) and its score negated, so that no other
-- sweep and no later operation on the user announces it again while Get
-- still reads the last seen time from it. Then the shard is pruned.
-- Returns the number of users announced.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '0', '(' .. num(now), 'WITHSCORES', 'LIMIT', '0', ARGV[9])
for i = 1, #due, 2 do
  local s = tonumber(due[i + 1])
  redis.call('ZADD', KEYS[1], fmt_score(-s), due[i])
  publish(ARGV[6], due[i], score_status(s), 'offline', math.floor(s))
end
prune_index(KEYS[1], now)
return #due / 2
