-- release: give up a lease without storing (the loader failed).
-- KEYS[1] meta key    (HASH)
-- ARGV[1] owner ID
-- ARGV[2] events channel
-- ARGV[3] origin
-- ARGV[4] the entry's value key (named in the wake-up)
-- Returns {'ok'}. Waiters are woken ("k {origin} {key}") to take over at
-- once; a meta key that held only the lease goes. A replay, or a lease
-- already gone, is {'ok'} too.
local m = redis.pcall('HMGET', KEYS[1], 'lease', 'waiters', 'hint', 'fresh_until_ms')
if m.err or not m[1] or string.sub(m[1], 1, #ARGV[1] + 1) ~= ARGV[1] .. ':' then
  return 'ok'
end
if m[3] or m[4] then
  redis.call('HDEL', KEYS[1], 'lease', 'waiters')
else
  redis.call('DEL', KEYS[1])
end
if (to_int(m[2], 0) or 0) > 0 then
  redis.call('PUBLISH', ARGV[2], 'k ' .. ARGV[3] .. ' ' .. ARGV[4])
end
return 'ok'
