-- sweep: announce the silent expiries of one online-index shard: users
-- whose presence expired without a Disconnect (or any later operation on
-- them) and who have not been announced yet. Uses lib.lua.
-- KEYS[1] presence:online:{slot}    the shard (zset)
-- KEYS[2] presence:sweeps:{slot}    request memo
-- ARGV[1..11] as lib.lua describes them ("" for the user and the
--             connection; ARGV[4..7] and ARGV[9..11] used: TTL,
--             retention, events channel, index, skew bound, replay
--             window, request ID)
-- ARGV[12] most members to announce in this call
-- Each pending member (score positive and below now: the presence key has
-- expired, by the same server clock that wrote the score) is announced with
-- the offline event Disconnect publishes ("previous" from the score's
-- status fraction, "at" the expiry) and its score negated, so that no other
-- sweep and no later operation on the user announces it again while Get
-- still reads the last seen time from it. Then the shard is pruned, and
-- members no script of this package writes are dropped.
-- Returns {'ok', number of users announced} or {'corrupt', 2, why} for a memo
-- this package did not write; a replay returns the first run's reply.
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then return {'ok', 0} end
local rec = replayed(KEYS[2], ARGV[11])
if rec == false then return {'corrupt', 2, REPLAY_CORRUPT} end
if rec then return rec end
local now = now_ms()
repair_index(KEYS[1], now)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '0', '(' .. int_str(now), 'WITHSCORES', 'LIMIT', '0', ARGV[12])
for i = 1, #due, 2 do
  local s = tonumber(due[i + 1])
  redis.call('ZADD', KEYS[1], fmt_score(-s), due[i])
  publish(ARGV[6], due[i], score_status(s), 'offline', math.floor(s))
end
prune_index(KEYS[1], now)
local n = #due / 2
if n > 0 then return remember(KEYS[2], ARGV[11], {'ok', n}, now, ARGV[10]) end
return {'ok', 0}
