-- events_sweep.lua: announce the expiries of one user's sessions that no
-- other call noticed, and schedule the user's next visit (uses
-- lib.lua).
--
-- KEYS[1] user index       session:index:{user_id}
-- KEYS[2] events stream    session:events:{slot}
-- KEYS[3] sweep schedule   session:due:{slot}
-- ARGV[1..3] user ID, stream length, index grace (ms): lib.lua's events
--
-- prune emits "expired" for each entry whose deadline passed (the one
-- atomic claim: every other script prunes the same way, so each expiry is
-- announced once); the user is then due again at the first deadline left
-- in the index (the schedule then lives at least as long as the index),
-- or leaves the schedule with an empty index. Run again
-- (a replayed pipeline) it finds nothing left to announce. Returns
-- {'ok', number of expiries announced}; {'corrupt', 1, why} when the index holds
-- data this package did not write (nothing written).
events(2)
local idx = KEYS[1]
local now = now_ms()
local bad = prune(idx, now)
if bad then return {'corrupt', 1, bad} end
local first = redis.call('ZRANGE', idx, '0', '0', 'WITHSCORES')
if #first == 2 then
  redis.call('ZADD', EV.due, first[2], EV.user)
  local t = redis.call('PTTL', idx)
  if t > 0 and redis.call('PTTL', EV.due) < t then redis.call('PEXPIRE', EV.due, t) end
else
  redis.call('ZREM', EV.due, EV.user)
end
return {'ok', EV.n}
