-- stats: the stats hash and the depth of every state, at one instant.
--
-- KEYS[1] high zset      queue:{q}:priority:high
-- KEYS[2] normal zset    queue:{q}:priority:normal
-- KEYS[3] low zset       queue:{q}:priority:low
-- KEYS[4] active zset    queue:{q}:active
-- KEYS[5] stats hash     queue:stats:{q}
-- KEYS[6] dead list      queue:dlq:{q}
-- Returns {'ok', {field, value, ...}, {ready_high, delayed_high, ready_normal,
-- delayed_normal, ready_low, delayed_low, in_flight, dead, oldest_ready_ms}}:
-- oldest_ready_ms is how long the longest-waiting ready job has been ready
-- (server time), 0 when none is.
local now = now_ms()
local maxscore = int_str(now * 1000 + 999)
local counts = {}
local oldest = nil
for i = 1, 3 do
  local ready = redis.call('ZCOUNT', KEYS[i], '-inf', maxscore)
  counts[#counts + 1] = ready
  counts[#counts + 1] = redis.call('ZCARD', KEYS[i]) - ready
  if ready > 0 then
    local first = redis.call('ZRANGE', KEYS[i], '0', '0', 'WITHSCORES')
    local at = math.floor(tonumber(first[2]) / 1000)
    if not oldest or at < oldest then
      oldest = at
    end
  end
end
counts[#counts + 1] = redis.call('ZCARD', KEYS[4])
counts[#counts + 1] = redis.call('LLEN', KEYS[6])
counts[#counts + 1] = oldest and math.max(now - oldest, 0) or 0
return {'ok', redis.call('HGETALL', KEYS[5]), counts}
