-- unset: take back a write whose tag could not be recorded (an
-- InvalidateTag ran during the load), so that no untagged entry survives.
-- KEYS[1] value key   (STRING)
-- KEYS[2] meta key    (HASH)
-- ARGV[1] write ID
-- Returns {'ok', 1} when the entry was the caller's write and is gone, {'ok', 0}
-- when it was already replaced (or gone).
local w = redis.pcall('HGET', KEYS[2], 'wid')
if w ~= ARGV[1] then
  return {'ok', 0}
end
redis.call('DEL', KEYS[1], KEYS[2])
return {'ok', 1}
