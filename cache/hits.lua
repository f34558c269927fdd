-- hits: add hits counted in memory to an entry's metadata.
-- KEYS[1] meta key    (HASH)
-- ARGV[1] hits to add
-- ARGV[2] flush ID, new for each flush
-- Returns {'ok'} when added (or already added by this flush: a replay),
-- {'none'} when the entry is gone or is a marker (nothing is created). A
-- hits field that is not a count is replaced by this flush's.
local m = redis.pcall('HMGET', KEYS[1], 'hits', 'hflush')
if m.err or not m[1] then
  return {'none'}
end
if m[2] == ARGV[2] then
  return 'ok'
end
if to_int(m[1], 0) then
  redis.call('HINCRBY', KEYS[1], 'hits', ARGV[1])
else
  redis.call('HSET', KEYS[1], 'hits', ARGV[1])
end
redis.call('HSET', KEYS[1], 'hflush', ARGV[2])
return 'ok'
