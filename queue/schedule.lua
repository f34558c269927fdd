-- schedule: create or replace a periodic job's definition. A definition
-- equal to the stored one (less its due tick) keeps the due tick, so any
-- number of instances may declare the same schedule at start-up.
--
-- KEYS[1] schedules hash  queue:{q}:schedules   name -> definition JSON
-- ARGV[1] schedule name
-- ARGV[2] the definition JSON less its leading '{"due":N,'
-- Returns {'ok', changed}: 1 when written (its due tick is then 0: the next
-- scheduler pass sets it to the first tick after server time), 0 when
-- the stored definition was the same.
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur and string.match(cur, '^{"due":%d+,(.*)$') == ARGV[2] then
  return {'ok', 0}
end
redis.call('HSET', KEYS[1], ARGV[1], '{"due":0,' .. ARGV[2])
return {'ok', 1}
