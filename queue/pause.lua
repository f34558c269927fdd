-- pause: pause or resume a queue. The flag is the stats hash's paused
-- field (the server time in ms when the queue was paused), read by the
-- dequeue script; resending either is harmless.
--
-- KEYS[1] stats hash  queue:stats:{q}
-- KEYS[2] wake list   queue:{q}:executions
-- ARGV[1] "1" to pause, "0" to resume
-- Returns {'ok', changed}: 1 when the queue's state changed, 0 when it was
-- already paused (resumed). A resume pushes a wake-up token, so that a
-- consumer blocked on the wake list polls at once.
if ARGV[1] == '1' then
  return {'ok', redis.call('HSETNX', KEYS[1], 'paused', int_str(now_ms()))}
end
-- the wake list is read before the first write, so a list of the wrong
-- type fails the resume before the flag goes
local empty = redis.call('LLEN', KEYS[2]) == 0
local n = redis.call('HDEL', KEYS[1], 'paused')
if empty then
  redis.call('RPUSH', KEYS[2], '1')
end
return {'ok', n}
