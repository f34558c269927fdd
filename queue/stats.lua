-- stats: the stats hash and the depth of every state, at one instant.
--
-- KEYS[1] high zset      queue:{q}:priority:high
-- KEYS[2] normal zset    queue:{q}:priority:normal
-- KEYS[3] low zset       queue:{q}:priority:low
-- KEYS[4] active zset    queue:{q}:active
-- KEYS[5] stats hash     queue:stats:{q}
-- KEYS[6] dead list      queue:dlq:{q}
-- Returns {{field, value, ...}, ready_high, delayed_high, ready_normal,
-- delayed_normal, ready_low, delayed_low, in_flight, dead}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local maxscore = now * 1000 + 999
local out = {redis.call('HGETALL', KEYS[5])}
for i = 1, 3 do
  local ready = redis.call('ZCOUNT', KEYS[i], '-inf', maxscore)
  out[#out + 1] = ready
  out[#out + 1] = redis.call('ZCARD', KEYS[i]) - ready
end
out[#out + 1] = redis.call('ZCARD', KEYS[4])
out[#out + 1] = redis.call('LLEN', KEYS[6])
return out
