-- typers: the typing indicators of a conversation that have not expired,
-- read-only.
-- KEYS[1] typers:{conversation_id} typing JSON values by expiry ms (zset)
-- ARGV[1] typing TTL, ms
-- ARGV[2] clock skew bound, ms
-- Returns {'ok', {typing JSON, ...}}, oldest expiry first, or {'corrupt', 1, why}
-- for an entry expiring later than any StartTyping sets.
local now = now_ms()
local vs = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. int_str(now), '+inf', 'WITHSCORES')
local far = now + tonumber(ARGV[1]) + tonumber(ARGV[2])
local out = {}
for i = 1, #vs, 2 do
  if tonumber(vs[i + 1]) > far then
    return {'corrupt', 1, 'an entry expires later than any StartTyping sets'}
  end
  out[#out + 1] = vs[i]
end
return {'ok', out}
