-- typing_start.lua: mark a user as typing in a conversation, throttled.
-- KEYS[1] typing:{conversation_id}:{user_id}          typing JSON (string)
-- KEYS[2] typers:{conversation_id}                    typing JSON values by expiry ms (zset)
-- KEYS[3] typing:throttle:{conversation_id}:{user_id} throttle marker (string)
-- ARGV[1] user ID
-- ARGV[2] username
-- ARGV[3] typing TTL, ms
-- ARGV[4] throttle interval, ms (0: no throttle)
-- Returns 1 if the indicator was written, 0 if throttled.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl, throttle = tonumber(ARGV[3]), tonumber(ARGV[4])
if throttle > 0 and not redis.call('SET', KEYS[3], '1', 'NX', 'PX', throttle) then
  return 0
end
local function esc(s)
  return (string.gsub(s, '[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == '\\' then return '\\\\' end
    return string.format('\\u%04x', string.byte(c))
  end))
end
local v = '{"userId":"' .. esc(ARGV[1]) .. '","username":"' .. esc(ARGV[2]) ..
  '","timestamp":' .. string.format('%.0f', now) .. '}'
local old = redis.call('GET', KEYS[1])
if old then redis.call('ZREM', KEYS[2], old) end
redis.call('SET', KEYS[1], v, 'PX', ttl)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.0f', now))
redis.call('ZADD', KEYS[2], string.format('%.0f', now + ttl), v)
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
