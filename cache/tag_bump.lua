-- tag_bump: start an invalidation: give the tag a new generation, so that
-- no load that started before it stores its value under the tag, and move
-- its members to the dying set, which the caller drains.
-- KEYS[1] tag key         (ZSET)
-- KEYS[2] tag generation  (STRING)
-- KEYS[3] dying set       (ZSET)
-- ARGV[1] the new generation (an ID new for each InvalidateTag call)
-- ARGV[2] the generation's TTL, ms
-- Returns {'corrupt', i, why} when the tag or dying set is not a sorted set,
-- {'ok', members moved}, or {'ok', -1} when a dying set is already there
-- (an invalidation running, or one that stopped midway): the caller
-- drains it and calls again. RENAMENX is O(1) and keeps the tag's TTL;
-- nothing here is proportional to the tag's size. A replay finds the tag
-- gone and returns {'ok', 0}; the caller drains the dying set all the same.
local t1 = redis.call('TYPE', KEYS[1]).ok
if t1 ~= 'zset' and t1 ~= 'none' then
  return {'corrupt', 1, 'holds a ' .. t1 .. ', want a zset'}
end
local t3 = redis.call('TYPE', KEYS[3]).ok
if t3 ~= 'zset' and t3 ~= 'none' then
  return {'corrupt', 3, 'holds a ' .. t3 .. ', want a zset'}
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
if t1 == 'none' then
  return {'ok', 0}
end
if redis.call('RENAMENX', KEYS[1], KEYS[3]) == 0 then
  return {'ok', -1}
end
return {'ok', redis.call('ZCARD', KEYS[3])}
