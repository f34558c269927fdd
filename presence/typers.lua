-- typers.lua: the typing indicators of a conversation that have not expired.
-- KEYS[1] typers:{conversation_id} typing JSON values by expiry ms (zset)
-- Returns the typing JSON values, oldest expiry first. Read-only.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%.0f', now), '+inf')
