-- typing_start: mark a user as typing in a conversation, throttled. Uses
-- lib.lua (its request memos).
-- KEYS[1] typing:{conversation_id}:{user_id}          typing JSON (string)
-- KEYS[2] typers:{conversation_id}                    typing JSON values by expiry ms (zset)
-- KEYS[3] typing:throttle:{conversation_id}:{user_id} throttle marker (string)
--         (typers:throttle:... with WithOtherWriters)
-- KEYS[4] typing:requests:{conversation_id}:{user_id} request memo
--         (typers:requests:... with WithOtherWriters)
-- ARGV[1] user ID
-- ARGV[2] username
-- ARGV[3] typing TTL, ms
-- ARGV[4] throttle interval, ms (0: no throttle)
-- ARGV[5] request ID, 16 hex digits
-- ARGV[6] clock skew bound, ms
-- ARGV[7] replay window, ms
-- Returns {'ok', 1} when the indicator was written, {'ok', 0} when throttled, or
-- {'corrupt', i, why}. A replay returns the first run's reply: with a
-- throttle, the marker holds the request ID of the write it admitted (no
-- memo needed); without one, the reply is recorded in KEYS[4].
-- Every key is read (its type checked) before the first write: the marker
-- is read first and written last, and the typers' writes, whose first
-- command fails the script on a key of a foreign type (WRONGTYPE), come
-- before the indicator's.
local ttl, throttle, id = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local rec
if throttle > 0 then
  local held = redis.call('GET', KEYS[3])
  if held then
    if held == id then return {'ok', 1} end
    local left = redis.call('PTTL', KEYS[3])
    if left < 0 or left > throttle then
      return {'corrupt', 3, 'throttle marker without a TTL within the throttle interval'}
    end
    return {'ok', 0}
  end
else
  rec = replayed(KEYS[4], id)
  if rec == false then return {'corrupt', 4, REPLAY_CORRUPT} end
  if rec then return rec end
end
local now = now_ms()
local v = '{"userId":' .. json_str(ARGV[1]) .. ',"username":' .. json_str(ARGV[2]) ..
  ',"timestamp":' .. int_str(now) .. '}'
local prev = redis.call('GET', KEYS[1])
if prev then redis.call('ZREM', KEYS[2], prev) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', int_str(now))
-- entries no StartTyping writes (expiring after now + TTL + the skew bound)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '(' .. int_str(now + ttl + tonumber(ARGV[6])), '+inf')
redis.call('ZADD', KEYS[2], int_str(now + ttl), v)
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('SET', KEYS[1], v, 'PX', ttl)
if throttle > 0 then
  -- absent when read above, in this same script
  redis.call('SET', KEYS[3], id, 'PX', throttle)
  return {'ok', 1}
end
return remember(KEYS[4], id, {'ok', 1}, now, ARGV[7])
