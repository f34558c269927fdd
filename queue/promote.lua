-- promote: make a scheduled job (delayed, or waiting for its retry
-- backoff) ready now. A resent request reports its first outcome.
--
-- KEYS[1] high zset      queue:{q}:priority:high
-- KEYS[2] normal zset    queue:{q}:priority:normal
-- KEYS[3] low zset       queue:{q}:priority:low
-- KEYS[4] wake list      queue:{q}:executions
-- KEYS[5] reply memo     queue:{q}:reply:{request_id}
-- ARGV[1] job ID
-- ARGV[2] reply memo TTL in ms
-- Returns {'ok'} when the job was scheduled and is now ready, {'none'}
-- when no job of that ID is scheduled (ready, in flight, dead, gone, or a
-- flow's parent waiting for its children).
local memo = replayed(KEYS[5])
if memo then
  return memo
elseif memo == false then
  return {'corrupt', 5, 'reply memo is not a reply'}
end
typecheck({{'LLEN', 4}})
local now = now_ms()
local maxscore = now * 1000 + 999
for i = 1, 3 do
  local s = redis.call('ZSCORE', KEYS[i], ARGV[1])
  if s then
    if tonumber(s) <= maxscore then
      break
    end
    redis.call('ZADD', KEYS[i], 'XX', int_str(now * 1000), ARGV[1])
    wake(KEYS[4])
    return remember(KEYS[5], {'ok'}, ARGV[2])
  end
end
return remember(KEYS[5], {'none'}, ARGV[2])
