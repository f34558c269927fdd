-- typing_stop.lua: clear a user's typing indicator in a conversation.
-- KEYS[1] typing:{conversation_id}:{user_id} typing JSON (string)
-- KEYS[2] typers:{conversation_id}           typing JSON values by expiry ms (zset)
-- Returns 1 if an indicator was cleared, 0 if there was none.
local old = redis.call('GET', KEYS[1])
if not old then return 0 end
redis.call('ZREM', KEYS[2], old)
redis.call('DEL', KEYS[1])
return 1
